//! Reading other clients' config files: one realistic fixture per dialect (in
//! `tests/data/dialects/`), detection, and errors that place themselves and keep secrets out.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use portico_host::config::ConfigError;
use portico_host::config::dialect::{self, Dialect, ImportContext, Imported, InputRequest};

const WORKSPACE: &str = "/home/ada/src/shop";

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dialects").join(name);
    std::fs::read_to_string(&path).expect("fixture")
}

/// The servers as `portico config import` writes them.
fn servers_toml(imported: &Imported) -> String {
    toml::to_string(&BTreeMap::from([("servers", &imported.servers)])).expect("serializes")
}

fn no_input(request: &InputRequest) -> Result<String, ConfigError> {
    panic!("asked for input {}", request.id)
}

/// Reads `file` in `dialect` with the workspace set, and no input.
fn import(dialect: Dialect, file: &str) -> Imported {
    let cx = ImportContext { workspace: Some(Path::new(WORKSPACE)), home: None, input: &no_input };
    dialect::read(dialect, &fixture(file), &cx).expect(file)
}

/// The error of reading `text` in `dialect`, with no workspace and no input.
fn error(dialect: Dialect, text: &str) -> ConfigError {
    dialect::read(dialect, text, &ImportContext::default()).expect_err(text)
}

fn assert_notes(imported: &Imported, expected: &[&str]) {
    assert_eq!(imported.notes, expected, "notes");
}

#[test]
fn claude_desktop() {
    let imported = import(Dialect::ClaudeDesktop, "claude_desktop_config.json");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.filesystem]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/Users/ada/Desktop", "/Users/ada/Downloads"]

[servers.github]
command = "docker"
args = ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"]

[servers.github.env]
GITHUB_PERSONAL_ACCESS_TOKEN = "ghp_example"

[servers.prices]
command = "/opt/prices/bin/prices-mcp"
args = ["--template", "$${price} per unit"]

[servers.prices.env]
PORT = "8080"
"#
    );
    assert_notes(&imported, &["prices: `disabled` not imported"]);
}

#[test]
fn claude_code_project_file_keeps_its_variables() {
    let imported = import(Dialect::ClaudeCode, "claude_code.mcp.json");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.api-server]
url = "${API_BASE_URL:-https://api.example.com}/mcp"

[servers.api-server.headers]
Authorization = "Bearer ${API_KEY}"

[servers.db]
command = "/usr/local/bin/db-mcp"
args = ["--config", "${CONFIG_PATH:-./db.toml}"]

[servers.db.env]
CACHE_DIR = "${HOME}/.cache/db"
DB_URL = "${DATABASE_URL}"

[servers.sentry]
url = "https://mcp.sentry.dev/sse"
transport = "sse"
"#
    );
    assert_notes(&imported, &[]);
}

#[test]
fn claude_code_user_file_adds_the_workspace_local_scope() {
    let imported = import(Dialect::ClaudeCode, "claude_code_user.claude.json");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.memory]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-memory", "--file", "/home/ada/src/shop/memory.json"]

[servers.postgres]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/shop"]
"#
    );
    assert_notes(
        &imported,
        &[
            "memory: from the local scope of project /home/ada/src/shop",
            "postgres: from the local scope of project /home/ada/src/shop",
        ],
    );
    // Without a workspace, the user scope alone.
    let user = dialect::read(Dialect::ClaudeCode, &fixture("claude_code_user.claude.json"), &ImportContext::default())
        .expect("reads");
    assert_eq!(user.servers.keys().collect::<Vec<_>>(), ["memory"]);
    assert_eq!(user.servers["memory"].args, ["-y", "@modelcontextprotocol/server-memory"]);
}

#[test]
fn cursor_resolves_its_variables() {
    let imported = import(Dialect::Cursor, "cursor.mcp.json");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.legacy]
url = "http://localhost:8931/sse"
transport = "sse"

[servers.linear]
url = "https://mcp.linear.app/mcp"

[servers.linear.headers]
Authorization = "Bearer ${LINEAR_API_KEY}"

[servers.local-docs]
command = "node"
args = ["/home/ada/src/shop/tools/docs-mcp.js", "--cache", "${HOME}/.cache/docs", "--name", "shop"]
env_file = "/home/ada/src/shop/.env"

[servers.local-docs.env]
GREETING = "$${greeting}"
LOG_LEVEL = "debug"
NODE_PATH = "/home/ada/src/shop/node_modules"
"#
    );
    assert_notes(
        &imported,
        &[
            "legacy: `auth` not imported: Cursor's OAuth client settings",
            "local-docs: `${workspaceFolder}` → /home/ada/src/shop",
            "local-docs: `${greeting}` is not a Cursor variable: kept as text",
        ],
    );
}

#[test]
fn workspace_folder_needs_a_workspace() {
    let e = error(Dialect::Cursor, &fixture("cursor.mcp.json"));
    assert_eq!(e.field.as_deref(), Some("mcpServers.local-docs.args[0]"));
    assert!(e.message.contains("workspace folder"), "{e}");
}

#[test]
fn vscode_asks_for_each_input_once() {
    let asked = RefCell::new(Vec::new());
    let input = |r: &InputRequest| {
        asked.borrow_mut().push((r.id.clone(), r.description.clone(), r.password));
        Ok("pplx-answer".to_owned())
    };
    let cx = ImportContext { workspace: Some(Path::new(WORKSPACE)), home: None, input: &input };
    let imported = dialect::read(Dialect::VsCode, &fixture("vscode.mcp.json"), &cx).expect("reads");
    assert_eq!(*asked.borrow(), [("perplexity-key".to_owned(), Some("Perplexity API Key".to_owned()), true)]);
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.Perplexity]
command = "npx"
args = ["-y", "server-perplexity-ask"]

[servers.Perplexity.env]
PERPLEXITY_API_KEY = "pplx-answer"

[servers.dev-server]
command = "node"
args = ["/home/ada/src/shop/build/index.js"]
env_file = "/home/ada/src/shop/.env"

[servers.fetch]
command = "uvx"
args = ["mcp-server-fetch"]

[servers.my-remote]
url = "http://api.contoso.com/mcp"

[servers.my-remote.headers]
API_KEY = "pplx-answer"
X-User = "${USER}"
"#
    );
    assert_notes(
        &imported,
        &[
            "Perplexity: `${input:perplexity-key}`: the answer is written into the imported value",
            "dev-server: `${workspaceFolder}` → /home/ada/src/shop",
            "dev-server: `dev` not imported: VS Code's development mode (watch and debug)",
            "my-remote: `${input:perplexity-key}`: the answer is written into the imported value",
        ],
    );
}

#[test]
fn vscode_input_errors_propagate() {
    let refuse = |_: &InputRequest| Err(ConfigError::new("no terminal to ask on"));
    let cx = ImportContext { workspace: Some(Path::new(WORKSPACE)), home: None, input: &refuse };
    let e = dialect::read(Dialect::VsCode, &fixture("vscode.mcp.json"), &cx).expect_err("refused");
    assert_eq!(e.message, "no terminal to ask on");
    assert_eq!(e.field.as_deref(), Some("servers.Perplexity.env.PERPLEXITY_API_KEY"));

    // The default context refuses too, and says which input.
    let text = r#"{"inputs": [{"type": "promptString", "id": "key"}], "servers": {"s": {"command": "${input:key}"}}}"#;
    let e = error(Dialect::VsCode, text);
    assert!(e.message.contains("`${input:key}`"), "{e}");
    assert_eq!(e.field.as_deref(), Some("servers.s.command"));
}

#[test]
fn vscode_variables_it_cannot_resolve_are_errors() {
    let e = error(Dialect::VsCode, r#"{"servers": {"s": {"command": "x", "args": ["${input:nope}"]}}}"#);
    assert_eq!(e.field.as_deref(), Some("servers.s.args[0]"));
    assert!(e.message.contains("not declared"), "{e}");
    let e = error(Dialect::VsCode, r#"{"servers": {"s": {"command": "x", "env": {"A": "${config:editor.tabSize}"}}}}"#);
    assert_eq!(e.field.as_deref(), Some("servers.s.env.A"));
}

#[test]
fn windsurf() {
    let imported = import(Dialect::Windsurf, "windsurf_mcp_config.json");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.figma]
url = "https://mcp.figma.com/mcp"

[servers.figma.headers]
Authorization = "Bearer ${file:/run/secrets/figma}"

[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
exclude = ["delete_repository", "push_files"]

[servers.github.env]
GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_TOKEN}"

[servers.puppeteer]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-puppeteer", "--title", "$${TITLE}", "--subtitle", "$${TITLE}"]
enabled = false
"#
    );
    assert_notes(
        &imported,
        &[
            "github: `disabledTools` → `exclude`",
            "puppeteer: `${TITLE}` is not a Windsurf variable: kept as text",
            "puppeteer: `disabled: true` → `enabled = false`",
        ],
    );
}

#[test]
fn zed_reads_jsonc_and_both_shapes() {
    let imported = import(Dialect::Zed, "zed_settings.json");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[servers.github.env]
GITHUB_PERSONAL_ACCESS_TOKEN = "ghp_example"

[servers.legacy-fs]
command = "/usr/local/bin/fs-mcp"
args = ["--root", "/home/ada"]
enabled = false

[servers.remote-tools]
url = "https://mcp.example.com/mcp"

[servers.remote-tools.headers]
Authorization = "Bearer token // not a comment"
"#
    );
    assert_notes(&imported, &["postgres-context-server: skipped: provided by a Zed extension"]);
}

#[test]
fn codex() {
    let imported = import(Dialect::Codex, "codex_config.toml");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
include = ["resolve-library-id", "get-library-docs"]
timeout = 45.5
startup_timeout = 20.0

[servers.context7.env]
CONTEXT7_API_KEY = "${CONTEXT7_API_KEY}"
LOG_LEVEL = "info"

[servers.figma]
url = "https://mcp.figma.com/mcp"
exclude = ["delete_file"]

[servers.figma.headers]
Authorization = "Bearer ${FIGMA_OAUTH_TOKEN}"
X-Figma-Region = "us-east-1"
X-Team = "${FIGMA_TEAM}"

[servers."old server"]
command = "/opt/old/bin/server"
cwd = "/opt/old"
enabled = false
startup_timeout = 5.0
"#
    );
    assert_notes(
        &imported,
        &[
            r#"context7: `env_vars` → `env` (NAME = "${NAME}")"#,
            "context7: `enabled_tools` → `include`",
            r#"figma: `bearer_token_env_var` → header `Authorization = "Bearer ${FIGMA_OAUTH_TOKEN}"`"#,
            "figma: `disabled_tools` → `exclude`",
            "figma: `required` not imported: Portico has no required servers",
        ],
    );
}

#[test]
fn goose_skips_builtin_extensions() {
    let imported = import(Dialect::Goose, "goose_config.yaml");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.events]
url = "http://localhost:8080/sse"
transport = "sse"
timeout = 60.0

[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
include = ["search_repositories", "get_issue"]
timeout = 300.0

[servers.github.env]
GITHUB_API_URL = "https://api.github.com"
GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_PERSONAL_ACCESS_TOKEN}"

[servers.remote]
url = "https://mcp.example.com/mcp"
enabled = false
timeout = 120.0

[servers.remote.headers]
X-Api-Version = "2"
"#
    );
    assert_notes(
        &imported,
        &[
            "developer: skipped: a `builtin` extension is part of Goose, not an MCP server to start",
            "events: `envs` and `env_keys` not imported: an HTTP server has no environment",
            "github: `env_keys` → `env` (NAME = \"${NAME}\"): Goose keeps these values in its keyring; \
             set GITHUB_PERSONAL_ACCESS_TOKEN in Portico's environment",
            "github: `available_tools` → `include`",
        ],
    );
}

#[test]
fn cline() {
    let imported = import(Dialect::Cline, "cline_mcp_settings.json");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.local]
command = "python"
args = ["-m", "server"]
cwd = "/home/ada/srv"

[servers.remote-http]
url = "https://example.com/mcp"
timeout = 60.0

[servers.remote-sse]
url = "https://example.com/sse"
transport = "sse"
enabled = false

[servers.remote-sse.headers]
Authorization = "Bearer cline-example"

[servers.weather]
command = "node"
args = ["/home/ada/Documents/Cline/MCP/weather-server/build/index.js"]
timeout = 120.0

[servers.weather.env]
OPENWEATHER_API_KEY = "ow-example"
"#
    );
    assert_notes(
        &imported,
        &[
            r#"remote-sse: an entry with only `url` is legacy SSE in Cline: `transport = "sse"`"#,
            "remote-sse: `disabled: true` → `enabled = false`",
            "weather: `autoApprove` (get_forecast, get_alerts) not imported: express it as an approval policy instead",
        ],
    );
}

#[test]
fn portico_reads_its_servers() {
    let imported = import(Dialect::Portico, "portico.toml");
    assert_eq!(
        servers_toml(&imported),
        r#"[servers.files]
command = "mcp-server-filesystem"
args = ["/srv"]

[servers.search]
url = "https://search.example.com/mcp"
include = ["search_*"]

[servers.search.headers]
Authorization = "Bearer ${SEARCH_TOKEN}"
"#
    );
    assert_notes(&imported, &[]);
}

/// Every fixture, with its dialect.
const FIXTURES: [(Dialect, &str); 11] = [
    (Dialect::Portico, "portico.toml"),
    (Dialect::ClaudeDesktop, "claude_desktop_config.json"),
    (Dialect::ClaudeCode, "claude_code.mcp.json"),
    (Dialect::ClaudeCode, "claude_code_user.claude.json"),
    (Dialect::Cursor, "cursor.mcp.json"),
    (Dialect::VsCode, "vscode.mcp.json"),
    (Dialect::Windsurf, "windsurf_mcp_config.json"),
    (Dialect::Zed, "zed_settings.json"),
    (Dialect::Codex, "codex_config.toml"),
    (Dialect::Goose, "goose_config.yaml"),
    (Dialect::Cline, "cline_mcp_settings.json"),
];

#[test]
fn imported_servers_read_back_as_portico_toml() {
    let answer = |_: &InputRequest| Ok("pplx-answer".to_owned());
    let cx = ImportContext { workspace: Some(Path::new(WORKSPACE)), home: None, input: &answer };
    for (dialect, file) in FIXTURES {
        let imported = dialect::read(dialect, &fixture(file), &cx).expect(file);
        let again = dialect::read(Dialect::Portico, &servers_toml(&imported), &cx).expect(file);
        assert_eq!(again.servers, imported.servers, "{file}");
    }
}

#[test]
fn plain_text_expands_back_to_itself() {
    struct Nothing;
    impl portico_host::config::expand::Source for Nothing {
        fn var(&self, _: &str) -> Option<String> {
            None
        }
        fn file(&self, path: &str) -> Result<String, String> {
            Err(path.to_owned())
        }
    }
    let imported = import(Dialect::ClaudeDesktop, "claude_desktop_config.json");
    let arg = &imported.servers["prices"].args[1];
    assert_eq!(portico_host::config::expand::expand(arg, "f", &Nothing).as_deref(), Ok("${price} per unit"));
}

#[test]
fn detects_by_name() {
    let cases = [
        ("/etc/portico/portico.toml", Dialect::Portico),
        ("/home/ada/src/shop/.mcp.json", Dialect::ClaudeCode),
        ("/home/ada/.claude.json", Dialect::ClaudeCode),
        ("/home/ada/.config/Claude/claude_desktop_config.json", Dialect::ClaudeDesktop),
        ("/home/ada/src/shop/.cursor/mcp.json", Dialect::Cursor),
        ("/home/ada/src/shop/.vscode/mcp.json", Dialect::VsCode),
        ("/home/ada/Library/Application Support/Code/User/mcp.json", Dialect::VsCode),
        ("/home/ada/.codeium/windsurf/mcp_config.json", Dialect::Windsurf),
        ("/home/ada/.config/zed/settings.json", Dialect::Zed),
        ("/home/ada/.codex/config.toml", Dialect::Codex),
        ("/home/ada/.config/goose/config.yaml", Dialect::Goose),
        ("/x/saoudrizwan.claude-dev/settings/cline_mcp_settings.json", Dialect::Cline),
    ];
    for (path, dialect) in cases {
        // The name wins over what the text holds.
        assert_eq!(dialect::detect(Path::new(path), "{\"servers\": {}}"), Some(dialect), "{path}");
    }
    // A name that tells nothing leaves it to the content.
    assert_eq!(dialect::detect(Path::new("/tmp/mcp.json"), ""), None);
    assert_eq!(dialect::detect(Path::new("/tmp/settings.json"), "{\"context_servers\": {}}"), Some(Dialect::Zed));
}

#[test]
fn detects_by_content() {
    for (dialect, file) in FIXTURES {
        assert_eq!(dialect::detect(Path::new("/tmp/unnamed"), &fixture(file)), Some(dialect), "{file}");
    }
    let projects_only = r#"{"projects": {"/p": {"mcpServers": {"a": {"command": "x"}}}}}"#;
    assert_eq!(dialect::detect(Path::new("/tmp/unnamed"), projects_only), Some(Dialect::ClaudeCode));
    assert_eq!(dialect::detect(Path::new("/tmp/unnamed"), r#"{"theme": "dark"}"#), None);
    assert_eq!(dialect::detect(Path::new("/tmp/unnamed"), "title = \"x\""), None);
    assert_eq!(dialect::detect(Path::new("/tmp/unnamed"), "a: [1"), None);
}

#[test]
fn syntax_errors_give_line_and_column() {
    let cases = [
        // JSON: the second key without a comma before it.
        (
            Dialect::ClaudeDesktop,
            "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" \"args\": [] }\n  }\n}\n",
            3,
            27,
        ),
        // JSONC: comments and trailing commas are fine, a missing colon is not.
        (
            Dialect::Zed,
            "// settings\n{\n  /* servers */\n  \"context_servers\": {\n    \"a\": {},\n    \"b\" {},\n  },\n}\n",
            6,
            9,
        ),
        // TOML: two array items without a comma.
        (Dialect::Codex, "[mcp_servers.a]\ncommand = \"x\"\nargs = [\"-y\" \"pkg\"]\n", 3, 14),
        // YAML: a key indented less than its siblings.
        (Dialect::Goose, "extensions:\n  a:\n    cmd: x\n   args: [1]\n", 4, 4),
        // portico.toml: a value of the wrong type has a place too.
        (Dialect::Portico, "[servers.a]\ncommand = \"x\"\nargs = \"one\"\n", 3, 8),
    ];
    for (dialect, text, line, column) in cases {
        let e = error(dialect, text);
        assert_eq!((e.line, e.column), (Some(line), Some(column)), "{dialect}: {e}");
    }
}

#[test]
fn a_wrong_type_names_the_field() {
    let cases = [
        (
            Dialect::ClaudeDesktop,
            r#"{"mcpServers": {"github": {"command": "x", "args": "sk-secret"}}}"#,
            "mcpServers.github.args",
        ),
        (Dialect::ClaudeCode, r#"{"mcpServers": {"a": {"type": "sse", "url": ["sk-secret"]}}}"#, "mcpServers.a.url"),
        (
            Dialect::Cursor,
            r#"{"mcpServers": {"a": {"command": "x", "env": {"K": ["sk-secret"]}}}}"#,
            "mcpServers.a.env.K",
        ),
        (Dialect::VsCode, r#"{"inputs": [{"id": "k", "password": "sk-secret"}], "servers": {}}"#, "inputs[0].password"),
        (
            Dialect::Windsurf,
            r#"{"mcpServers": {"a": {"serverUrl": "u", "headers": "sk-secret"}}}"#,
            "mcpServers.a.headers",
        ),
        (
            Dialect::Zed,
            r#"{"context_servers": {"a": {"command": {"path": 1, "args": ["sk-secret"]}}}}"#,
            "context_servers.a.command.path",
        ),
        (
            Dialect::Codex,
            "[mcp_servers.a]\ncommand = \"x\"\nargs = [\"ok\", [\"sk-secret\"]]\n",
            "mcp_servers.a.args[1]",
        ),
        (
            Dialect::Goose,
            "extensions:\n  a:\n    type: stdio\n    cmd: x\n    envs: [sk-secret]\n",
            "extensions.a.envs",
        ),
        (
            Dialect::Cline,
            r#"{"mcpServers": {"a": {"command": "x", "disabled": "sk-secret"}}}"#,
            "mcpServers.a.disabled",
        ),
        (Dialect::Portico, "[servers.a]\ncommand = \"x\"\nargs = \"sk-secret\"\n", "servers.a.args"),
        (Dialect::ClaudeDesktop, r#"{"mcpServers": ["sk-secret"]}"#, "mcpServers"),
        (Dialect::ClaudeDesktop, r#"{"mcpServers": {"a": "sk-secret"}}"#, "mcpServers.a"),
        (Dialect::ClaudeDesktop, r#"{"mcpServers": {"a": {"args": ["sk-secret"]}}}"#, "mcpServers.a"),
        (
            Dialect::ClaudeCode,
            r#"{"mcpServers": {"a": {"type": "websocket", "url": "sk-secret"}}}"#,
            "mcpServers.a.type",
        ),
    ];
    for (dialect, text, field) in cases {
        let e = error(dialect, text);
        assert_eq!(e.field.as_deref(), Some(field), "{dialect}: {e}");
    }
}

#[test]
fn no_secret_appears_in_an_error() {
    let cases = [
        (Dialect::ClaudeDesktop, r#"{"mcpServers": {"a": {"command": "sk-secret", "args": "sk-secret"}}}"#),
        (Dialect::ClaudeDesktop, r#"{"mcpServers": {"a": {"command": "sk-secret" "args": []}}}"#),
        (Dialect::ClaudeDesktop, r#"{"mcpServers": {"a": {"command": "sk-secret\q"}}}"#),
        (Dialect::ClaudeCode, r#"{"mcpServers": {"a": {"type": "sk-secret", "command": "x"}}}"#),
        (Dialect::Cursor, r#"{"mcpServers": {"a": {"command": "${workspaceFolder}/sk-secret"}}}"#),
        (Dialect::VsCode, r#"{"servers": {"a": {"command": "x", "env": {"K": "sk-secret ${input:k}"}}}}"#),
        (Dialect::VsCode, r#"{"servers": {"a": {"command": "x", "env": {"K": "sk-secret ${command:k}"}}}}"#),
        (
            Dialect::Windsurf,
            "{\"mcpServers\": {\"a\": {\"serverUrl\": \"sk-secret\", \"headers\": {\"A\": 1, \"B\": {}}}}}",
        ),
        (
            Dialect::Zed,
            "{\"context_servers\": {\"a\": {\"command\": \"sk-secret\", \"env\": {\"K\": [\"sk-secret\"]}}}}",
        ),
        (Dialect::Zed, "{\"context_servers\": {\"a\": {\"command\": \"sk-secret\" /* x */ \"args\": []}}}"),
        (Dialect::Codex, "[mcp_servers.a]\ncommand = \"sk-secret\nargs = []\n"),
        (Dialect::Codex, "[mcp_servers.a]\ncommand = \"x\"\nenabled = \"sk-secret\"\n"),
        (Dialect::Codex, "[mcp_servers.a]\ncommand = \"x\"\nenv = { K = sk-secret }\n"),
        (Dialect::Goose, "extensions:\n  a:\n    type: stdio\n    cmd: \"sk-secret\n"),
        (Dialect::Goose, "extensions:\n  a:\n    type: stdio\n    cmd: x\n    timeout: sk-secret\n"),
        (Dialect::Goose, "extensions:\n  a:\n    type: stdio\n    cmd: !secret sk-secret\n"),
        (Dialect::Cline, r#"{"mcpServers": {"a": {"url": "sk-secret", "timeout": "sk-secret"}}}"#),
        (Dialect::Portico, "[servers.a]\ncommand = \"x\"\nargs = \"sk-secret\"\n"),
        (Dialect::Portico, "[servers.a]\ncommand = [\"sk-secret\"]\n"),
        (Dialect::Portico, "[servers.a]\ncommand = \"x\"\ntimeout = \"sk-secret\"\n"),
        (Dialect::Portico, "[servers.a]\ncommand = \"sk-secret\nargs = []\n"),
        (Dialect::Portico, "[servers.a.restart]\nmax_restarts = -1\n# sk-secret\n"),
    ];
    for (dialect, text) in cases {
        let e = error(dialect, text);
        for shown in [e.to_string(), format!("{e:?}")] {
            assert!(!shown.contains("sk-secret"), "{dialect}: {shown}");
        }
    }
}

#[test]
fn a_file_without_servers_imports_none() {
    let imported =
        dialect::read(Dialect::Zed, "// mine\n{\"theme\": \"One Dark\",}\n", &ImportContext::default()).expect("reads");
    assert!(imported.servers.is_empty());
    assert_notes(&imported, &["the file has no `context_servers`: no servers"]);
    let e = error(Dialect::ClaudeDesktop, "[1, 2]");
    assert!(e.message.contains("top of the file"), "{e}");
}

#[test]
fn dialect_names() {
    let names: Vec<_> = Dialect::all().iter().map(|d| d.name()).collect();
    assert_eq!(
        names,
        ["portico", "claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed", "codex", "goose", "cline"]
    );
    for d in Dialect::all() {
        assert_eq!(Dialect::from_name(d.name()), Some(*d));
    }
    assert_eq!(Dialect::from_name("claude"), None);
}

#[test]
fn usual_locations_cover_every_client() {
    let (home, cwd) = (Path::new("/home/ada"), Path::new(WORKSPACE));
    let locations = dialect::usual_locations(home, cwd);
    for d in Dialect::all().iter().filter(|d| **d != Dialect::Portico) {
        assert!(locations.iter().any(|(l, _)| l == d), "{d}");
    }
    for (d, path) in &locations {
        assert!(path.starts_with(home), "{}", path.display());
        assert_eq!(dialect::detect(path, ""), Some(*d), "{}", path.display());
    }
    let paths: Vec<&PathBuf> = locations.iter().map(|(_, p)| p).collect();
    assert!(paths.contains(&&PathBuf::from("/home/ada/.config/Claude/claude_desktop_config.json")));
    assert!(paths.contains(&&PathBuf::from("/home/ada/Library/Application Support/Claude/claude_desktop_config.json")));
    assert!(paths.contains(&&PathBuf::from("/home/ada/src/shop/.mcp.json")));
}

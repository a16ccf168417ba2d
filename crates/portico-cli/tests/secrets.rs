//! Planted secrets never come out: a secret in the environment, in the config (a header
//! value), in a header taken from the environment, and in a call's arguments is looked for in
//! every output of a run of `portico` verbs and of a gateway serving a call over stdio:
//! stdout, stderr (with debug logging on), the activity log as listed, shown and exported,
//! and every file in the state directory (the SQLite log and its WAL included).

mod common;

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{everything, portico, write};

const IN_ENV: &str = "planted-env-9c1e77d0";
const IN_CONFIG: &str = "planted-config-31aa0f5e";
const IN_HEADER_ENV: &str = "planted-header-5b2d41c9";
const IN_ARGUMENTS: &str = "planted-arg-77f0c2ab";
const ALL: [&str; 4] = [IN_ENV, IN_CONFIG, IN_HEADER_ENV, IN_ARGUMENTS];

fn run(what: &str, cmd: &mut Command, outputs: &mut Vec<(String, String)>) -> (i32, String) {
    let Output { status, stdout, stderr } = cmd.output().expect("run portico");
    let out = String::from_utf8_lossy(&stdout).into_owned();
    outputs.push((format!("{what}: stdout"), out.clone()));
    outputs.push((format!("{what}: stderr"), String::from_utf8_lossy(&stderr).into_owned()));
    (status.code().unwrap_or(-1), out)
}

/// `portico` with the planted environment and debug logs on stderr.
fn planted(dir: &Path) -> Command {
    let mut c = portico();
    c.current_dir(dir).env("PLANTED_ENV", IN_ENV).env("PLANTED_HEADER", IN_HEADER_ENV).env("RUST_LOG", "debug");
    c.stdin(Stdio::null());
    c
}

fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn planted_secrets_appear_in_no_output_log_or_state_file() {
    let dir = tempfile::tempdir().expect("tmp");
    // An HTTP upstream that the gateway reaches with the planted headers.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let remote = rt.block_on(async {
        use portico::schema::{Implementation, Tool, object};
        let server = portico::server::Server::builder(Implementation::new("remote", "1.0.0"))
            .tool(Tool::new("ping", object(serde_json::json!({"type": "object"}))), |_: serde_json::Value| async {
                "pong"
            })
            .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let endpoint = portico::transport::http::server::StreamableHttp::new(server).build();
        tokio::spawn(async move { endpoint.serve_with_shutdown(listener, std::future::pending()).await });
        addr
    });
    let text = format!(
        "[gateway]\nstate_dir = \"state\"\nping_interval = 0\n\n\
         [[policy.rules]]\ndecision = \"allow\"\n\n\
         [servers.ev]\ncommand = {:?}\nenv = {{ API_KEY = \"${{PLANTED_ENV}}\" }}\n\n\
         [servers.remote]\nurl = \"http://{remote}/mcp\"\n\
         headers = {{ Authorization = \"Bearer ${{PLANTED_HEADER}}\", X-Api-Key = \"{IN_CONFIG}\" }}\n",
        everything().display().to_string()
    );
    let cfg = write(dir.path(), "portico.toml", &text);
    let c = cfg.to_str().expect("utf-8").to_owned();
    let mut outputs = Vec::new();

    run("config check", planted(dir.path()).args(["config", "check", "-c", &c]), &mut outputs);
    run("servers", planted(dir.path()).args(["servers", "-c", &c]), &mut outputs);
    run("tools", planted(dir.path()).args(["tools", "-c", &c]), &mut outputs);
    let args = format!("{{\"a\": 1, \"b\": 2, \"token\": \"{IN_ARGUMENTS}\"}}");
    let (code, out) =
        run("call", planted(dir.path()).args(["call", "ev__add", "--json", &args, "-c", &c]), &mut outputs);
    assert_eq!(code, 0, "{out}");
    let token_arg = format!("token={IN_ARGUMENTS}");
    run(
        "policy explain",
        planted(dir.path()).args(["policy", "explain", "ev__add", "a=1", &token_arg, "-c", &c]),
        &mut outputs,
    );

    // The gateway serving one client over stdio: initialize, a call with the secret, end of input.
    let mut serve = planted(dir.path())
        .args(["serve", "-c", &c])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    {
        let mut stdin = serve.stdin.take().expect("stdin");
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
            format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"ev__add","arguments":{args}}}}}"#
            ),
        ];
        for line in lines {
            writeln!(stdin, "{line}").expect("write");
        }
        // Keep stdin open until the call's answer is in the log, then close it.
        let started = Instant::now();
        let db = dir.path().join("state");
        while started.elapsed() < Duration::from_secs(30) {
            let (_, out) = run("log (poll)", planted(dir.path()).args(["log", "--json", "-c", &c]), &mut outputs);
            if out.lines().filter(|l| l.contains("\"tools/call\"")).count() >= 2 {
                break;
            }
            assert!(db.exists(), "no state directory");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let waited = serve.wait_with_output().expect("serve output");
    let served = String::from_utf8_lossy(&waited.stdout).into_owned();
    assert!(served.contains("\"sum\""), "the served call was answered: {served}");
    outputs.push(("serve: stdout".into(), served));
    outputs.push(("serve: stderr".into(), String::from_utf8_lossy(&waited.stderr).into_owned()));

    let (code, out) = run("log --json", planted(dir.path()).args(["log", "--json", "-c", &c]), &mut outputs);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().filter(|l| l.contains("\"tools/call\"")).count(), 2, "{out}");
    assert!(out.contains("hmac-sha256:"), "the token argument is kept as its keyed hash: {out}");
    let id = out
        .lines()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?.get("id")?.as_str().map(str::to_owned))
        .expect("a record id");
    run("log show", planted(dir.path()).args(["log", "show", &id, "-c", &c]), &mut outputs);
    run("log", planted(dir.path()).args(["log", "-c", &c]), &mut outputs);
    run("log verify", planted(dir.path()).args(["log", "verify", "-c", &c]), &mut outputs);
    let export = dir.path().join("export.jsonl");
    let export_arg = export.to_str().expect("utf-8").to_owned();
    run("log export", planted(dir.path()).args(["log", "export", "--out", &export_arg, "-c", &c]), &mut outputs);
    outputs.push(("export file".into(), std::fs::read_to_string(&export).expect("export written")));
    let mut state = Vec::new();
    files_under(&dir.path().join("state"), &mut state);
    assert!(!state.is_empty());
    for file in state {
        let bytes = std::fs::read(&file).expect("read state file");
        outputs.push((format!("state file {}", file.display()), String::from_utf8_lossy(&bytes).into_owned()));
    }

    let mut found = Vec::new();
    for (what, text) in &outputs {
        for secret in ALL {
            if text.contains(secret) {
                found.push(format!("`{secret}` in {what}:\n{text}"));
            }
        }
    }
    assert!(found.is_empty(), "planted secrets came out:\n{}", found.join("\n---\n"));
    assert!(outputs.len() > 20, "every output was scanned");
}

//! A person at a terminal answers approvals: `portico approve` against a running gateway's admin
//! API (typed answers, `--json`, `ID --decision`, `--watch`), and `portico call` on a real
//! pseudo-terminal asking its own `ask` right there.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{everything, portico, write};
use portico::client::Client;
use portico::schema::Implementation;
use portico::transport::child::ChildProcess;
use serde_json::{Value, json};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port")
}

/// A config whose tool calls ask (the default), with the admin API on `port`.
fn asking_config(dir: &Path, port: u16) -> std::path::PathBuf {
    let text = format!(
        "[gateway]\nstate_dir = \"state\"\nping_interval = 0\n\n[admin]\nlisten = \"127.0.0.1:{port}\"\n\n[approvals]\ntimeout = \"60s\"\n\n[servers.ev]\ncommand = {:?}\n",
        everything().display().to_string()
    );
    write(dir, "portico.toml", &text)
}

/// Runs `portico approve ARGS` with `input` typed on its stdin; (exit code, stdout, stderr).
async fn approve(cfg: &Path, args: &[&str], input: &str) -> (i32, String, String) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_portico"));
    cmd.arg("approve").args(args).arg("-c").arg(cfg);
    cmd.env_remove("PORTICO_CONFIG").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn approve");
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        stdin.write_all(input.as_bytes()).await.expect("type");
    }
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.expect("approve ends");
    let out = out.expect("output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Waits until `portico approve --json` lists `n` pending approvals.
async fn pending(cfg: &Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, out, err) = approve(cfg, &["--json"], "").await;
        if code == 0 {
            let list: Vec<Value> = serde_json::from_str(&out).unwrap_or_default();
            if list.len() == n {
                return list;
            }
        }
        assert!(Instant::now() < deadline, "never {n} pending: {code} {out} {err}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn portico_approve_answers_a_running_gateways_approvals() {
    let dir = tempfile::tempdir().expect("tmp");
    let port = free_port();
    let cfg = asking_config(dir.path(), port);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (transport, child) = ChildProcess::new(env!("CARGO_BIN_EXE_portico"))
            .args(["serve", "--admin", "-c", cfg.to_str().expect("utf-8")])
            .spawn()
            .expect("spawn");
        let client = Client::builder(Implementation::new("agent", "1")).connect(transport).await.expect("connect");

        // Typed at the terminal: "o" lets the waiting call through.
        let c = client.clone();
        let call = tokio::spawn(async move { c.call_tool("ev__add", json!({"a": 20, "b": 22})).await });
        let list = pending(&cfg, 1).await;
        assert_eq!(list[0]["exposed"], "ev__add");
        assert_eq!(list[0]["arguments"], json!({"a": 20, "b": 22}));
        let (code, out, err) = approve(&cfg, &[], "x\no\n").await;
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("wants to run `ev__add` on server `ev`") && out.contains("allow_once"), "{out}");
        let r = tokio::time::timeout(Duration::from_secs(20), call).await.expect("ends").expect("join").expect("call");
        assert_eq!(r.structured_content, Some(json!({"sum": 42})), "{r:?}");

        // By id, without asking: deny.
        let c = client.clone();
        let call = tokio::spawn(async move { c.call_tool("ev__add", json!({"a": 1, "b": 1})).await });
        let id = pending(&cfg, 1).await[0]["id"].as_str().expect("id").to_owned();
        let (code, out, err) = approve(&cfg, &[&id, "--decision", "deny"], "").await;
        assert_eq!(code, 0, "{out}{err}");
        let r = tokio::time::timeout(Duration::from_secs(20), call).await.expect("ends").expect("join").expect("call");
        assert_eq!(r.is_error, Some(true));
        let text = serde_json::to_string(&r.content).unwrap_or_default();
        assert!(text.contains("denied by"), "{text}");
        // Answering it again says it is gone.
        let (code, _, err) = approve(&cfg, &[&id, "--decision", "deny"], "").await;
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no pending approval"), "{err}");

        // --watch: a call that comes later is asked as it arrives; end of input stops.
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_portico"));
        cmd.args(["approve", "--watch", "-c"]).arg(&cfg).env_remove("PORTICO_CONFIG");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut watcher = cmd.spawn().expect("watch");
        let mut stdin = watcher.stdin.take().expect("stdin");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let c = client.clone();
        let call = tokio::spawn(async move { c.call_tool("ev__add", json!({"a": 2, "b": 3})).await });
        pending(&cfg, 1).await;
        {
            use tokio::io::AsyncWriteExt;
            stdin.write_all(b"o\n").await.expect("type");
        }
        let r = tokio::time::timeout(Duration::from_secs(20), call).await.expect("ends").expect("join").expect("call");
        assert_eq!(r.structured_content, Some(json!({"sum": 5})), "{r:?}");
        drop(stdin);
        let out = tokio::time::timeout(Duration::from_secs(20), watcher.wait_with_output()).await.expect("exits");
        let out = String::from_utf8_lossy(&out.expect("output").stdout).into_owned();
        assert!(out.contains("waiting for approvals") && out.contains("allow_once"), "{out}");

        // A wrong token is refused, clearly.
        let (code, _, err) = approve(&cfg, &["--json", "--token", "wrong"], "").await;
        assert_eq!(code, 3, "{err}");
        assert!(err.contains("refused") && !err.contains("wrong"), "the token is not echoed: {err}");

        client.close().await;
        let status = tokio::time::timeout(Duration::from_secs(15), child.shutdown()).await.expect("exits");
        assert!(status.expect("status").success());
    });
}

#[test]
fn portico_call_on_a_terminal_asks_there() {
    use nix::pty::openpty;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = asking_config(dir.path(), free_port());
    let pty = openpty(None, None).expect("openpty");
    let slave_in = pty.slave.try_clone().expect("dup");
    let mut child = portico()
        .args(["call", "ev__add", "a=4", "b=5", "-c"])
        .arg(&cfg)
        .stdin(Stdio::from(slave_in))
        .stderr(Stdio::from(pty.slave))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    // What the terminal shows, read off the master side.
    let screen = Arc::new(Mutex::new(String::new()));
    let mut master = std::fs::File::from(pty.master);
    let mut reader = master.try_clone().expect("dup master");
    let shown = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            shown.lock().expect("screen").push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while !screen.lock().expect("screen").contains("[o]nce") {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("no question on the terminal: {}", screen.lock().expect("screen"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let question = screen.lock().expect("screen").clone();
    assert!(question.contains("`ev__add`") && question.contains("\"a\": 4"), "{question}");
    master.write_all(b"o\n").expect("answer");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("portico call did not finish: {}", screen.lock().expect("screen"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    child.stdout.take().expect("stdout").read_to_string(&mut out).expect("read");
    assert!(status.success(), "{status}: {out}");
    assert!(out.contains('9'), "the call ran once allowed: {out}");
}

//! The `portico` binary: verbs, exit codes, config errors, direct `--server`, config import,
//! `serve` with a real client, and `kill -9` of the gateway leaving no child behind.

mod common;

use common::{Guard, alive, children, config, ev, everything, portico, run, write};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn verbs_and_exit_codes() {
    let dir = tempfile::tempdir().expect("tmp");
    let broken = "[servers.broken]\ncommand = \"false\"\nstartup_timeout = 2\n[servers.broken.restart]\nmax_restarts = 1\ninitial_backoff = 0.01\n";
    let cfg = config(dir.path(), &format!("{}{broken}", ev("ev")));
    let c = cfg.to_str().expect("utf-8");

    let (code, out, err) = run(portico().args(["tools", "--config", c]));
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().next().is_some_and(|l| l.starts_with("TOOL")), "{out}");
    assert!(out.contains("ev__add") && out.contains("Adds two integers"), "{out}");

    let (code, out, _) = run(portico().args(["tools", "--json", "-c", c]));
    assert_eq!(code, 0);
    let tools: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert!(tools.as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "ev__countdown")));

    let (code, out, err) = run(portico().args(["call", "ev__add", "a=2", "b=40", "-c", c]));
    assert_eq!((code, out.trim()), (0, "{\"sum\":42}"), "{err}");
    let (code, out, _) = run(portico().args(["call", "ev__add", "-c", c, "--json", r#"{"a": 1, "b": 2}"#]));
    assert_eq!(code, 0);
    let result: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(result["structuredContent"], serde_json::json!({"sum": 3}));

    // The upstream refuses the arguments with a tool error, passed on as it is: exit 1.
    let (code, out, _) = run(portico().args(["call", "ev__add", "a=x", "b=1", "-c", c]));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("invalid arguments for tool add"), "{out}");

    // A server that cannot start: exit 3, naming it.
    let (code, _, err) = run(portico().args(["call", "broken__anything", "-c", c]));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("server `broken`"), "{err}");

    let (code, out, err) = run(portico().args(["servers", "-c", c]));
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.starts_with("ev ") && l.contains("ready")), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("broken") && (l.contains("failed") || l.contains("restarting"))),
        "{out}"
    );

    let (code, out, _) = run(portico().args(["read", "everything://readme", "-c", c]));
    assert_eq!((code, out.trim()), (0, "# Everything\nA tour of MCP."));
    let (code, out, _) = run(portico().args(["prompt", "ev__review", "code=x", "-c", c]));
    assert_eq!(code, 0);
    assert!(out.contains("Review this code:"), "{out}");

    let (code, _, err) = run(portico().args(["call", "ev__nope", "-c", c]));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn config_errors_name_file_line_and_field_and_never_a_secret() {
    let dir = tempfile::tempdir().expect("tmp");
    let bad = write(dir.path(), "bad.toml", "[servers.a]\ncommand = \"x\"\nargs = \"sk-secret-value\"\n");
    let (code, _, err) = run(portico().args(["config", "check", "-c", bad.to_str().expect("utf-8")]));
    assert_eq!(code, 2);
    assert!(err.contains("bad.toml:3:") && err.contains("servers.a.args"), "{err}");
    assert!(!err.contains("sk-secret-value"), "{err}");

    let both = write(
        dir.path(),
        "both.toml",
        "[servers.a]\ncommand = \"x\"\n\n[servers.b]\ncommand = \"y\"\nurl = \"http://h\"\n",
    );
    let (code, _, err) = run(portico().args(["tools", "-c", both.to_str().expect("utf-8")]));
    assert_eq!(code, 2);
    assert!(err.contains("both.toml:6:") && err.contains("servers.b.url"), "{err}");

    let unknown = write(dir.path(), "unknown.toml", "[servers.a]\ncommand = \"x\"\ncomand = \"y\"\n");
    let (code, _, err) = run(portico().args(["config", "check", "-c", unknown.to_str().expect("utf-8")]));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning") && err.contains("servers.a.comand"), "{err}");

    let (code, _, err) = run(portico().args(["tools"]).current_dir(dir.path()));
    assert_eq!(code, 2);
    assert!(err.contains("--config"), "{err}");
}

#[test]
fn direct_server_and_import() {
    let dir = tempfile::tempdir().expect("tmp");
    let server = everything().display().to_string();
    let (code, out, err) = run(portico().args(["tools", "--server", &server]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("add ") && !out.contains("__"), "no prefix without a host: {out}");
    let (code, out, _) = run(portico().args(["call", "add", "a=1", "b=1", "--server", &server]));
    assert_eq!((code, out.trim()), (0, "{\"sum\":2}"));

    // A Claude Desktop file is used as it is, and imported into portico.toml.
    let claude = format!(
        r#"{{"mcpServers": {{"my tools": {{"command": {server:?}, "args": [], "env": {{"TOKEN": "sk-1"}}}}}}}}"#
    );
    let path = write(dir.path(), "claude_desktop_config.json", &claude);
    let (code, out, err) = run(portico().args(["tools", "-c", path.to_str().expect("utf-8")]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("my-tools__add"), "{out}");
    let toml = dir.path().join("portico.toml");
    let (code, _, err) = run(portico().args([
        "config",
        "import",
        path.to_str().expect("utf-8"),
        "--out",
        toml.to_str().expect("utf-8"),
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("claude-desktop") && err.contains("my-tools"), "{err}");
    let (code, _, err) = run(portico().args(["config", "check", "-c", toml.to_str().expect("utf-8")]));
    assert_eq!(code, 0, "{err}");
    let (code, _, _) = run(portico().args([
        "config",
        "import",
        path.to_str().expect("utf-8"),
        "--out",
        toml.to_str().expect("utf-8"),
    ]));
    assert_eq!(code, 2, "import never overwrites a file");
}

#[test]
fn kill_9_of_the_gateway_leaves_no_child() {
    let dir = tempfile::tempdir().expect("tmp");
    // Children that ignore SIGTERM and never read stdin: only the kernel's parent-death signal
    // can stop them.
    let stubborn = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(120)";
    let servers = format!(
        "[servers.a]\ncommand = \"python3\"\nargs = [\"-c\", {stubborn:?}]\nstartup_timeout = 120\n\n[servers.b]\ncommand = \"python3\"\nargs = [\"-c\", {stubborn:?}]\nstartup_timeout = 120\n"
    );
    let cfg = config(dir.path(), &servers);
    let gateway = portico()
        .args(["serve", "--startup-wait", "60", "-c", cfg.to_str().expect("utf-8")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn portico");
    let gateway = Guard(gateway);
    let pid = gateway.0.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    let kids = loop {
        let kids: Vec<u32> = children(pid).into_iter().filter(|p| alive(*p)).collect();
        if kids.len() == 2 {
            break kids;
        }
        assert!(Instant::now() < deadline, "upstreams never started: {kids:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).expect("kill -9");
    let deadline = Instant::now() + Duration::from_secs(10);
    while kids.iter().any(|k| alive(*k)) {
        assert!(Instant::now() < deadline, "children outlived the gateway: {kids:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serve_stdio_to_a_real_client() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path(), &format!("{}{}", ev("one"), ev("two")));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (client, child) = common::serve_and_connect(&["serve", "-c", cfg.to_str().expect("utf-8")]).await;
        let tools = client.list_all_tools().await.expect("tools");
        assert!(tools.iter().any(|t| t.name == "one__add") && tools.iter().any(|t| t.name == "two__add"));
        let r = client.call_tool("two__add", serde_json::json!({"a": 20, "b": 22})).await.expect("call");
        assert_eq!(r.structured_content, Some(serde_json::json!({"sum": 42})));
        let pid = child.pid();
        let upstreams: Vec<u32> = children(pid);
        assert_eq!(upstreams.len(), 2, "one process per upstream, shared: {upstreams:?}");
        client.close().await;
        // The client going away ends `serve`, which stops its upstreams.
        let status =
            tokio::time::timeout(Duration::from_secs(15), child.shutdown()).await.expect("exits").expect("status");
        assert!(status.success(), "{status}");
        assert!(upstreams.iter().all(|p| !alive(*p)), "upstreams left running");
    });
}

#[test]
fn calls_go_through_policy_and_an_ask_without_anyone_to_ask_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = format!(
        "[gateway]\nstate_dir = \"state\"\n\n[[policy.rules]]\nname = \"no-sleeping\"\ntool = \"*__sleep\"\ndecision = \"deny\"\nreason = \"sleeping wastes time\"\n\n{}",
        ev("ev")
    );
    let cfg = write(dir.path(), "portico.toml", &text);
    let c = cfg.to_str().expect("utf-8");
    // A rule denies: the tool error says which rule and why.
    let (code, out, _) = run(portico().args(["call", "ev__sleep", "ms=1", "-c", c]).stdin(Stdio::null()));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no-sleeping") && out.contains("sleeping wastes time"), "{out}");
    // No rule matches and the server is not trusted: the default asks; with no terminal, no
    // client form and no admin API, nobody can be asked, so the call is refused, saying so.
    let (code, out, _) = run(portico().args(["call", "ev__add", "a=1", "b=2", "-c", c]).stdin(Stdio::null()));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("needs a person's approval"), "{out}");
}

#[test]
fn kill_9_right_after_the_answers_loses_no_record() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(dir.path(), &ev("ev"));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let calls = 64;
    rt.block_on(async {
        let (client, child) = common::serve_and_connect(&["serve", "-c", cfg.to_str().expect("utf-8")]).await;
        let all = (0..calls).map(|i| {
            let c = client.clone();
            async move { c.call_tool("ev__add", serde_json::json!({"a": i, "b": 1})).await }
        });
        for r in futures_util::future::join_all(all).await {
            assert_eq!(r.expect("call").is_error, None);
        }
        // Every answer is in; the gateway dies at once, with no chance to flush anything.
        let pid = child.pid();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL)
            .expect("kill");
        let _ = tokio::time::timeout(Duration::from_secs(10), child.shutdown()).await;
    });
    let c = cfg.to_str().expect("utf-8");
    let (code, out, err) = run(portico().args(["log", "--json", "-n", "1000", "-c", c]).stdin(Stdio::null()));
    assert_eq!(code, 0, "{err}");
    let records = out.lines().filter(|l| l.contains("\"tools/call\"")).count();
    assert_eq!(records, calls, "every call a client got an answer for is in the log:\n{out}\n{err}");
    let (code, out, err) = run(portico().args(["log", "verify", "-c", c]).stdin(Stdio::null()));
    assert_eq!(code, 0, "the chain verifies after the crash: {out}{err}");
}

#[test]
fn one_shot_verbs_wait_for_upstreams_only_as_long_as_the_config_says() {
    let dir = tempfile::tempdir().expect("tmp");
    // A server that never answers its handshake, allowed 2 s to start.
    let silent = "import time\ntime.sleep(60)";
    let servers = format!(
        "{}[servers.silent]\ncommand = \"python3\"\nargs = [\"-c\", {silent:?}]\nstartup_timeout = 2\n",
        ev("ev")
    );
    let cfg = config(dir.path(), &servers);
    let started = Instant::now();
    let (code, out, err) =
        run(portico().args(["call", "ev__add", "a=1", "b=2", "-c", cfg.to_str().expect("utf-8")]).stdin(Stdio::null()));
    let took = started.elapsed();
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains('3'), "{out}");
    // Not the 30 s it used to wait whatever the config said.
    assert!(took < Duration::from_secs(20), "waited {took:?} for a server allowed 2 s");
}

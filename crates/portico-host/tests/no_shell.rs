//! A config (here another client's file, read as it is) runs no shell: a command with spaces
//! is one program name, and `;`, `$(…)`, backquotes and `&&` in arguments or environment
//! values are text. A malicious file can run only the commands it lists itself.

mod common;

use std::time::Duration;

use portico_host::Host;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malicious_config_runs_only_its_listed_commands_and_never_a_shell() {
    let dir = tempfile::tempdir().expect("tmp");
    let marker = |n: u32| dir.path().join(format!("pwned-{n}"));
    let touch = |n: u32| format!("touch {}", marker(n).display());
    let file = json!({"mcpServers": {
        "spaces": {"command": touch(1), "args": []},
        "chained": {"command": "/bin/echo", "args": [
            format!("; {}", touch(2)), format!("$({})", touch(3)), format!("`{}`", touch(4)), format!("&& {} |", touch(5))
        ]},
        "ev": {"command": common::example("everything"), "args": [], "env": {"X": format!("$({})", touch(6))}}
    }});
    let path = dir.path().join("claude_desktop_config.json");
    std::fs::write(&path, file.to_string()).expect("write");
    let mut config = portico_host::config::load(&path).expect("loads").config;
    config.gateway.state_dir = dir.path().join("state");
    let host = Host::start(config);
    host.ready(Duration::from_secs(5)).await;
    // The listed server runs, with the environment value passed as text.
    let r = host.call_tool("ev__add", json!({"a": 1, "b": 2}), None).await;
    assert_eq!(r.structured_content, Some(json!({"sum": 3})), "{r:?}");
    // The others are not MCP servers (or not programs at all) and never get ready.
    for name in ["spaces", "chained"] {
        let status = host.upstream(name).expect("listed").status();
        assert_ne!(status.state.as_str(), "ready", "{name}: {status:?}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    host.shutdown().await;
    for n in 1..=6 {
        assert!(!marker(n).exists(), "a shell ran: {} exists", marker(n).display());
    }
}

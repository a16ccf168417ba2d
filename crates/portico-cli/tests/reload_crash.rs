//! `kill -9` of `portico serve` while it reloads its config, again and again: each time no
//! child outlives it, the next start works on the same state directory, and in the end the
//! activity log holds every answered call and its chain verifies. Stored "always allow" answers
//! survive the same crashes, one stored while each happens.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{alive, children, everything, portico, run, write};
use serde_json::json;

const ROUNDS: usize = 6;
const CALLS: usize = 3;

#[test]
fn kill_9_during_reloads_keeps_the_log_and_leaves_no_child() {
    let dir = tempfile::tempdir().expect("tmp");
    let server = |name: &str| format!("[servers.{name}]\ncommand = {:?}\n", everything().display().to_string());
    let head = "[gateway]\nstate_dir = \"state\"\nping_interval = 0\n\n[[policy.rules]]\ndecision = \"allow\"\n\n";
    let one = format!("{head}{}", server("ev"));
    let two = format!("{head}{}{}", server("ev"), server("extra"));
    let cfg = write(dir.path(), "portico.toml", &one);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for round in 0..ROUNDS {
        rt.block_on(async {
            let (client, child) = common::serve_and_connect(&["serve", "-c", cfg.to_str().expect("utf-8")]).await;
            for i in 0..CALLS {
                let r = client.call_tool("ev__add", json!({ "a": round, "b": i })).await.expect("call");
                assert_eq!(r.is_error, None, "round {round}: {r:?}");
            }
            let pid = child.pid();
            // Change the config (one server more, or one fewer): the watcher reloads it, and the
            // gateway is killed a moment later, at a different point of the reload each round.
            write(dir.path(), "portico.toml", if round % 2 == 0 { &two } else { &one });
            tokio::time::sleep(Duration::from_millis(20 * round as u64)).await;
            let kids: Vec<u32> = children(pid).into_iter().filter(|p| alive(*p)).collect();
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
                nix::sys::signal::Signal::SIGKILL,
            )
            .expect("kill -9");
            let _ = tokio::time::timeout(Duration::from_secs(10), child.shutdown()).await;
            let deadline = Instant::now() + Duration::from_secs(10);
            while kids.iter().any(|k| alive(*k)) {
                assert!(Instant::now() < deadline, "round {round}: children outlived the gateway: {kids:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
    }
    let c = cfg.to_str().expect("utf-8");
    let (code, out, err) = run(portico().args(["log", "--json", "-n", "1000", "-c", c]).stdin(Stdio::null()));
    assert_eq!(code, 0, "{err}");
    let records = out.lines().filter(|l| l.contains("\"tools/call\"")).count();
    assert_eq!(records, ROUNDS * CALLS, "every answered call is in the log:\n{out}");
    let (code, out, err) = run(portico().args(["log", "verify", "-c", c]).stdin(Stdio::null()));
    assert_eq!(code, 0, "the chain verifies after {ROUNDS} crashes: {out}{err}");
}

/// Sends SIGKILL to `pid`.
fn kill_9(pid: u32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill -9");
}

#[test]
fn always_answers_survive_kill_9_during_reloads() {
    use portico_host::policy::{AlwaysRule, AlwaysStore};
    let dir = tempfile::tempdir().expect("tmp");
    let server = |name: &str| format!("[servers.{name}]\ncommand = {:?}\n", everything().display().to_string());
    // No rule allows anything: every tool call asks, and nobody answers within 1 s.
    let head = "[gateway]\nstate_dir = \"state\"\nping_interval = 0\n\n[approvals]\ntimeout = 1\n\n";
    let one = format!("{head}{}", server("ev"));
    let two = format!("{head}{}{}", server("ev"), server("extra"));
    let cfg = write(dir.path(), "portico.toml", &one);
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let store = AlwaysStore::open(&state).expect("always-store");
    let mut stored = Vec::new();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for round in 0..4usize {
        rt.block_on(async {
            let (client, child) = common::serve_and_connect(&["serve", "-c", cfg.to_str().expect("utf-8")]).await;
            if round == 0 {
                // Nothing stored yet: the call is asked about, nobody answers, it is refused.
                let r = client.call_tool("ev__add", json!({ "a": 1, "b": 2 })).await.expect("call");
                assert_eq!(r.is_error, Some(true), "refused without an answer: {r:?}");
                let text = serde_json::to_string(&r.content).expect("JSON");
                assert!(text.contains("approv"), "refused because nobody approved it: {text}");
                // A person answers "always" (as `portico approve --always` stores it).
                stored.push(store.add(AlwaysRule::new("ev", "add").exposed("ev__add")).expect("add"));
            }
            // Every round, after every crash: the stored answer allows the call at once.
            let r = client.call_tool("ev__add", json!({ "a": round, "b": 1 })).await.expect("call");
            assert_eq!(r.is_error, None, "round {round}: the stored answer allows it: {r:?}");
            let pid = child.pid();
            // A reload starts; another answer is stored meanwhile; the gateway is killed.
            write(dir.path(), "portico.toml", if round % 2 == 0 { &two } else { &one });
            let adding = {
                let state = state.clone();
                std::thread::spawn(move || {
                    AlwaysStore::open(&state).and_then(|s| s.add(AlwaysRule::new("extra", format!("tool_{round}"))))
                })
            };
            tokio::time::sleep(Duration::from_millis(15 * round as u64)).await;
            kill_9(pid);
            stored.push(adding.join().expect("thread").expect("stored while the gateway was killed"));
            let _ = tokio::time::timeout(Duration::from_secs(10), child.shutdown()).await;
        });
    }
    // The file is whole and holds every answer stored, and a new gateway honours them.
    let c = cfg.to_str().expect("utf-8");
    let (code, out, err) = run(portico().args(["policy", "list", "--json", "-c", c]).stdin(Stdio::null()));
    assert_eq!(code, 0, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let ids: Vec<&str> = listed.as_array().expect("a list").iter().filter_map(|r| r["id"].as_str()).collect();
    for id in &stored {
        assert!(ids.contains(&id.as_str()), "stored answer {id} is kept: {out}");
    }
    assert_eq!(ids.len(), stored.len(), "{out}");
    rt.block_on(async {
        let (client, child) = common::serve_and_connect(&["serve", "-c", c]).await;
        let r = client.call_tool("ev__add", json!({ "a": 2, "b": 2 })).await.expect("call");
        assert_eq!(r.is_error, None, "after the crashes: {r:?}");
        let _ = child.shutdown().await;
    });
}

//! `kill -9` of `portico serve` while it reloads its config, again and again: each time no
//! child outlives it, the next start works on the same state directory, and in the end the
//! activity log holds every answered call and its chain verifies.

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

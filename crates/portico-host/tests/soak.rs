//! Soak driver for stdio upstreams under the host (ignored; run by `scripts/soak.sh`, which
//! sets the counts): servers spawned and stopped by reloads, and killed with `SIGKILL` in the
//! middle of calls, round after round. Afterwards `/proc` must show no zombie child, no more
//! open descriptors than before, and no process that was ever a child still alive (an orphan).

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{config_in, eventually, everything};
use portico_host::Host;
use serde_json::json;

fn soak_count(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// When `pid` started (field 22 of `/proc/PID/stat`, in clock ticks since boot); `None` once it
/// is gone. With the pid, it names one process even when pids are reused.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().nth(19)?.parse().ok()
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(')').next().and_then(|s| s.split_whitespace().next()) == Some("Z"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "soak: run by scripts/soak.sh"]
async fn soak_stdio_spawn_and_kill() {
    let rounds = soak_count("SOAK_STDIO_ROUNDS", 100);
    let dir = tempfile::tempdir().expect("tmp");
    let fast = "timeout = 10\nrestart = { initial_backoff = 0.01, max_backoff = 0.05, max_restarts = 0 }";
    let one = config_in(dir.path(), &everything("a", fast));
    let two = config_in(dir.path(), &format!("{}{}", everything("a", fast), everything("b", fast)));
    let host = Host::start(one.clone());
    host.ready(Duration::from_secs(60)).await;
    let me = std::process::id();
    let (fds, rss) = (common::open_fds(), rss_kib());
    let mut seen = BTreeSet::new();
    let (mut killed_mid_call, mut failed_as_expected, mut spawned) = (0usize, 0usize, 0usize);
    let started = Instant::now();
    for i in 0..rounds {
        // A server started and stopped by a reload.
        host.reload(two.clone()).await;
        host.ready(Duration::from_secs(30)).await;
        if let Some(pid) = host.upstream("b").and_then(|u| u.status().pid) {
            seen.insert((pid, start_time(pid)));
            spawned += 1;
        }
        host.reload(one.clone()).await;
        // A call in flight, and its server killed with SIGKILL.
        let Some(pid) = host.upstream("a").and_then(|u| u.status().pid) else {
            panic!("round {i}: `a` has no process: {:?}", host.upstream("a").map(|u| u.status()));
        };
        seen.insert((pid, start_time(pid)));
        let h = host.clone();
        let call = tokio::spawn(async move { h.call_tool("a__sleep", json!({"ms": 5000}), None).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL)
            .expect("kill");
        killed_mid_call += 1;
        let r = tokio::time::timeout(Duration::from_secs(15), call).await.expect("the call ends").expect("join");
        if r.is_error == Some(true) {
            failed_as_expected += 1;
        }
        // Restarted by the supervisor.
        let back = eventually(Duration::from_secs(30), || {
            host.upstream("a").and_then(|u| u.status().pid).filter(|p| *p != pid)
        })
        .await;
        assert!(back.is_some(), "round {i}: `a` was not restarted");
        spawned += 1;
        host.ready(Duration::from_secs(30)).await;
    }
    let r = host.call_tool("a__add", json!({"a": 1, "b": 1}), None).await;
    assert_eq!(r.structured_content, Some(json!({"sum": 2})), "the gateway still works");
    let elapsed = started.elapsed();
    let settled = eventually(Duration::from_secs(20), || {
        let live = common::children(me).into_iter().filter(|p| common::alive(*p)).count();
        (live == 1 && common::open_fds() <= fds + 2).then_some(())
    })
    .await;
    let (fds_after, rss_after) = (common::open_fds(), rss_kib());
    let zombies_running: Vec<u32> = common::children(me).into_iter().filter(|p| zombie(*p)).collect();
    host.shutdown().await;
    let gone =
        eventually(Duration::from_secs(10), || common::children(me).iter().all(|p| !common::alive(*p)).then_some(()))
            .await;
    let zombies: Vec<u32> = common::children(me).into_iter().filter(|p| zombie(*p)).collect();
    // A pid counts as ours only with the start time it had: pids are reused (pid_max may be
    // 32,768, fewer than a long run's spawns and the machine's other processes).
    let orphans: Vec<u32> = seen
        .iter()
        .filter(|(p, started)| common::alive(*p) && !zombie(*p) && start_time(*p) == *started)
        .map(|(p, _)| *p)
        .collect();
    eprintln!(
        "SOAK stdio-upstreams: {rounds} rounds in {:.1} s: {spawned} spawns, {killed_mid_call} SIGKILLs mid-call \
         ({failed_as_expected} of those calls failed cleanly), {} distinct processes; open fds {fds} -> {fds_after}; \
         RSS KiB {rss} -> {rss_after}; zombies while running {}, after shutdown {}; orphans {}",
        elapsed.as_secs_f64(),
        seen.len(),
        zombies_running.len(),
        zombies.len(),
        orphans.len(),
    );
    assert!(settled.is_some(), "children or descriptors did not settle: fds {fds} -> {fds_after}");
    assert!(gone.is_some(), "shutdown left children: {:?}", common::children(me));
    assert!(zombies_running.is_empty() && zombies.is_empty(), "zombies: {zombies_running:?} {zombies:?}");
    assert!(orphans.is_empty(), "orphans still alive: {orphans:?}");
    assert_eq!(failed_as_expected, killed_mid_call, "every call on a killed server failed with a tool error");
}

/// The gateway's call path under load with upstreams restarting: `SOAK_GATEWAY_INFLIGHT` calls
/// in flight (64) across 5 stdio upstreams for `SOAK_GATEWAY_SECS` seconds, one upstream killed
/// with `SIGKILL` every `SOAK_GATEWAY_RESTART_SECS` seconds (the host restarts it). Calls that
/// fail must all be to the upstream killed last; the activity log must hold exactly one record
/// per call, and its chain must verify.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "soak: run by scripts/soak.sh"]
async fn soak_gateway_calls_with_restarts() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use portico_host::audit::{AuditLog, RawAudit};
    use portico_host::oversight::Supervisor;

    let secs = soak_count("SOAK_GATEWAY_SECS", 20) as u64;
    let inflight = soak_count("SOAK_GATEWAY_INFLIGHT", 64);
    let every = soak_count("SOAK_GATEWAY_RESTART_SECS", 5) as u64;
    let dir = tempfile::tempdir().expect("tmp");
    let fast = "restart = { initial_backoff = 0.05, max_backoff = 0.5, max_restarts = 0 }";
    let servers: String = (0..5).map(|i| everything(&format!("up{i}"), fast)).collect();
    let config = config_in(dir.path(), &format!("[[policy.rules]]\ndecision = \"allow\"\n\n{servers}"));
    let log = AuditLog::open(&RawAudit::default(), &config.gateway.state_dir).await.expect("log");
    let supervisor = Arc::new(Supervisor::new(&config).expect("supervisor").with_audit(log));
    let host = Host::with_oversight(config, supervisor.clone());
    host.ready(Duration::from_secs(60)).await;
    let rss_start = rss_kib();

    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let failures: Arc<std::sync::Mutex<Vec<(usize, String)>>> = Arc::default();
    let workers: Vec<_> = (0..inflight)
        .map(|w| {
            let (host, stop, ok, failed, failures) =
                (host.clone(), stop.clone(), ok.clone(), failed.clone(), failures.clone());
            tokio::spawn(async move {
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let up = (w + i) % 5;
                    let r = host.call_tool(&format!("up{up}__add"), json!({"a": w, "b": i}), None).await;
                    if r.is_error == Some(true) {
                        failed.fetch_add(1, Ordering::Relaxed);
                        failures.lock().expect("lock").push((up, format!("{:?}", r.content)));
                    } else {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
            })
        })
        .collect();
    let started = Instant::now();
    let mut killed = Vec::new();
    let mut samples = Vec::new();
    let mut round = 0usize;
    // RSS every 5 s (or every restart interval when shorter); a kill every `every` s.
    let tick = Duration::from_secs(every.clamp(1, 5));
    let mut next_kill = Duration::from_secs(every);
    while started.elapsed() < Duration::from_secs(secs) {
        tokio::time::sleep(tick.min(Duration::from_secs(secs).saturating_sub(started.elapsed()))).await;
        if started.elapsed() >= Duration::from_secs(secs) {
            break;
        }
        samples.push(format!("{:.0}s {} MiB", started.elapsed().as_secs_f64(), rss_kib() / 1024));
        if started.elapsed() < next_kill {
            continue;
        }
        next_kill += Duration::from_secs(every);
        let name = format!("up{}", round % 5);
        if let Some(pid) = host.upstream(&name).and_then(|u| u.status().pid) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
                nix::sys::signal::Signal::SIGKILL,
            );
            killed.push(round % 5);
        }
        round += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.expect("worker");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    let log = supervisor.audit().expect("log");
    log.flush().await.expect("flush");
    let report = log.verify().await.expect("verify");
    let records = report.records;
    let rss_end = rss_kib();
    let failures = failures.lock().expect("lock").clone();
    let innocent: Vec<_> = failures.iter().filter(|(up, _)| !killed.contains(up)).collect();
    eprintln!(
        "SOAK gateway: {secs} s, {inflight} in flight over 5 upstreams, {} killed: {ok} calls ok, {failed} failed \
         ({:.0} calls/s); {} records, chain verified: {}; RSS {rss_start} → {rss_end} KiB",
        killed.len(),
        (ok + failed) as f64 / elapsed,
        records,
        report.first_bad_seq().is_none(),
    );
    eprintln!("SOAK gateway: RSS over time: {}", samples.join(", "));
    if let Some((up, why)) = failures.first() {
        eprintln!("SOAK gateway: first failure (up{up}): {why}");
    }
    assert!(
        innocent.is_empty(),
        "calls failed on upstreams that were never killed: {:?}",
        &innocent[..innocent.len().min(3)]
    );
    assert_eq!(records, (ok + failed) as u64, "one record per call");
    assert!(report.first_bad_seq().is_none(), "{report:?}");
    host.shutdown().await;
}

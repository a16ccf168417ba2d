//! The calls in progress ([`portico_host::activity`]) and the tool switches, on a real
//! upstream: progress is seen, a person's cancel reaches the upstream and the caller, and a
//! tool switched off is refused and hidden.

mod common;

use std::time::Duration;

use portico_host::Host;
use portico_host::activity::{CallEvent, Stage};
use serde_json::json;

use common::{config_in, everything, text};

const WAIT: Duration = Duration::from_secs(30);

async fn host(dir: &std::path::Path) -> Host {
    let host = Host::start(config_in(dir, &everything("ev", "")));
    host.ready(WAIT).await;
    host
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_progress_shows_its_progress_and_leaves_when_done() {
    let dir = tempfile::tempdir().expect("tmp");
    let host = host(dir.path()).await;
    let mut events = host.activity().subscribe();
    let result = host.call_tool_by("ev__countdown", json!({"steps": 3}), "ui:test").await;
    assert_eq!(text(&result), "liftoff");
    let mut seen = Vec::new();
    while let Ok(Ok(e)) = tokio::time::timeout(Duration::from_millis(200), events.recv()).await {
        seen.push(e);
    }
    let started = seen.iter().find_map(|e| match e {
        CallEvent::Started { call } => Some(call.clone()),
        _ => None,
    });
    let started = started.expect("a started event");
    assert_eq!((started.tool.as_str(), started.principal.as_str()), ("ev__countdown", "ui:test"));
    let progress: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            CallEvent::Updated { call } => call.progress.clone(),
            _ => None,
        })
        .collect();
    assert!(!progress.is_empty(), "progress reached the activity list: {seen:?}");
    assert!(progress.iter().any(|p| p.message.as_deref() == Some("counting") && p.total == Some(3.0)));
    assert!(matches!(seen.last(), Some(CallEvent::Ended { cancelled: false, .. })), "{seen:?}");
    assert!(host.activity().list().is_empty());
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_cancels_a_running_call_and_the_caller_is_told() {
    let dir = tempfile::tempdir().expect("tmp");
    let host = host(dir.path()).await;
    let caller = host.clone();
    let call = tokio::spawn(async move { caller.call_tool_by("ev__sleep", json!({"ms": 60_000}), "ui:test").await });
    let running = common::eventually(WAIT, || {
        host.activity().list().into_iter().find(|c| c.tool == "ev__sleep" && c.stage == Stage::Running)
    })
    .await
    .expect("the call runs");
    assert!(host.activity().cancel(&running.id));
    let result = tokio::time::timeout(WAIT, call).await.expect("ends at once").expect("join");
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("cancelled"), "{}", text(&result));
    assert!(host.activity().list().is_empty());
    assert!(!host.activity().cancel(&running.id), "gone");
    // The upstream is still usable: the cancellation ended only that call.
    let again = host.call_tool_by("ev__sleep", json!({"ms": 1}), "ui:test").await;
    assert_eq!(text(&again), "slept 1 ms");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_switched_off_is_hidden_and_refused_until_switched_on() {
    let dir = tempfile::tempdir().expect("tmp");
    let host = host(dir.path()).await;
    let entry = host.registry().tools.get("ev__add").cloned().expect("ev__add");
    assert!(!host.hides(&entry));
    host.set_tool_enabled("ev__add", false);
    assert!(host.hides(&entry));
    assert_eq!(host.switches().off(), vec!["ev__add".to_owned()]);
    let refused = host.call_tool_by("ev__add", json!({"a": 1, "b": 2}), "ui:test").await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("switched off"), "{}", text(&refused));
    host.set_tool_enabled("ev__add", true);
    assert!(!host.hides(&entry));
    let ok = host.call_tool_by("ev__add", json!({"a": 1, "b": 2}), "ui:test").await;
    assert_eq!(ok.structured_content, Some(json!({"sum": 3})));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_switched_off_for_one_session_leaves_only_its_list() {
    use portico::client::{Client, EraMode};
    use portico::schema::{Implementation, ProtocolVersion};
    let dir = tempfile::tempdir().expect("tmp");
    let host = host(dir.path()).await;
    let gateway = portico_host::gateway::Gateway::new(host.clone());
    gateway.synced(WAIT).await;
    // A handshake-era session, and a 2026-07-28 client on one connection (as over stdio).
    for (era, tag) in
        [(EraMode::Handshake(ProtocolVersion::V2025_11_25), "handshake"), (EraMode::Stateless, "stateless")]
    {
        let connect = |name: String| {
            let (client_end, server_end) = portico::transport::memory::pair();
            gateway.server().connect(server_end);
            Client::builder(Implementation::new(name, "1")).era(era).connect(client_end)
        };
        let a = connect(format!("a-{tag}")).await.expect("connect a");
        let b = connect(format!("b-{tag}")).await.expect("connect b");
        let sessions = host.client_sessions();
        let of = |name: &str| {
            sessions.iter().find(|s| s.client.as_deref() == Some(&format!("{name}-{tag} 1"))).map(|s| s.id)
        };
        let (sa, sb) = (of("a").expect("a is listed"), of("b").expect("b is listed"));
        assert_ne!(sa, sb);
        let names = |tools: Vec<portico::schema::Tool>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();

        host.set_tool_enabled_for("ev__add", sa, false);
        assert!(!names(a.list_all_tools().await.expect("list a")).contains(&"ev__add".to_owned()), "{tag}");
        assert!(names(b.list_all_tools().await.expect("list b")).contains(&"ev__add".to_owned()), "{tag}");
        let refused = a.call_tool("ev__add", json!({"a": 1, "b": 2})).await.expect("a call");
        assert!(text(&refused).contains("switched off"), "{tag}: {}", text(&refused));
        let fine = b.call_tool("ev__add", json!({"a": 1, "b": 2})).await.expect("b call");
        assert_eq!(fine.structured_content, Some(json!({"sum": 3})), "{tag}");

        host.set_tool_enabled_for("ev__add", sa, true);
        assert!(names(a.list_all_tools().await.expect("list a")).contains(&"ev__add".to_owned()), "{tag}");
        a.close().await;
        b.close().await;
    }
    host.shutdown().await;
}

/// A tool switched off for everyone stays off when the host starts again on the same state
/// directory (the switch is kept in `tools-off.json`); switched on, it stays on. A file that
/// cannot be read is reported, no tool is off, and the next switch writes it anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_switched_off_stays_off_after_a_restart() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("state").join(portico_host::switches::SWITCHES_FILE);
    let host = host(dir.path()).await;
    host.set_tool_enabled("ev__add", false);
    host.shutdown().await;
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), r#"["ev__add"]"#);
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777, 0o600);

    let host = self::host(dir.path()).await;
    let entry = host.registry().tools.get("ev__add").cloned().expect("ev__add");
    assert!(host.hides(&entry), "still off after the restart");
    let refused = host.call_tool_by("ev__add", json!({"a": 1, "b": 2}), "ui:test").await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("switched off"), "{}", text(&refused));
    host.set_tool_enabled("ev__add", true);
    host.shutdown().await;

    let host = self::host(dir.path()).await;
    assert!(host.switches().off().is_empty(), "switched on, it stays on");
    host.shutdown().await;

    std::fs::write(&file, "not json").expect("write");
    let host = self::host(dir.path()).await;
    assert!(host.switches().off().is_empty(), "an unreadable file switches nothing off");
    host.set_tool_enabled("ev__echo", false);
    assert_eq!(std::fs::read_to_string(&file).expect("rewritten"), r#"["ev__echo"]"#);
    host.shutdown().await;
}

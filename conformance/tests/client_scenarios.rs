//! The `conformance-client` binary against Portico's own `conformance-server` over HTTP, in
//! every era: a scenario it has no script for makes it call every tool with arguments made up
//! from the schemas, answering sampling and elicitation on the way. The official suite's
//! scenarios themselves run in `scripts/conformance.sh`.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_conformance-server");
const CLIENT: &str = env!("CARGO_BIN_EXE_conformance-client");

/// The fixture tools the official server scenarios call.
const TOOLS: [&str; 13] = [
    "json_schema_2020_12_tool",
    "test_audio_content",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_embedded_resource",
    "test_error_handling",
    "test_image_content",
    "test_multiple_content_types",
    "test_sampling",
    "test_simple_text",
    "test_tool_with_logging",
    "test_tool_with_progress",
];

/// The fixture server on a free port, killed when dropped.
struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Served {
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let child = Command::new(SERVER)
        .args(["--port", &port.to_string()])
        .env("RUST_LOG", "warn")
        .env_remove(portico_conformance::TEST_TOOLS_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn conformance-server");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "conformance-server did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Served { child, url: format!("http://127.0.0.1:{port}/mcp") }
}

/// Runs the client; (exit success, stderr).
fn client(url: &str, scenario: &str, version: Option<&str>) -> (bool, String) {
    let mut cmd = Command::new(CLIENT);
    cmd.arg(url)
        .env("MCP_CONFORMANCE_SCENARIO", scenario)
        .env("RUST_LOG", "conformance_client=info")
        .env_remove("MCP_CONFORMANCE_CONTEXT")
        .env_remove("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(v) = version {
        cmd.env("MCP_CONFORMANCE_PROTOCOL_VERSION", v);
    }
    let mut child = cmd.spawn().expect("spawn conformance-client");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let status = child.wait().expect("wait");
    (status.success(), stderr)
}

#[test]
fn calls_every_fixture_tool_in_every_era() {
    let served = serve();
    for version in [None, Some("2025-06-18"), Some("2025-11-25"), Some("2026-07-28")] {
        let (ok, log) = client(&served.url, "every-tool", version);
        assert!(ok, "{version:?} failed:\n{log}");
        for tool in TOOLS {
            let line = log
                .lines()
                .find(|l| l.contains("tool called") && l.contains(&format!("tool=\"{tool}\"")))
                .unwrap_or_else(|| panic!("{version:?}: {tool} was not called:\n{log}"));
            let failed = line.contains("is_error=Some(true)");
            assert_eq!(failed, tool == "test_error_handling", "{version:?}: {line}");
        }
        for asked in ["sampling requested", "form elicitation accepted"] {
            assert!(log.contains(asked), "{version:?}: the server never got to {asked:?}:\n{log}");
        }
    }
}

#[test]
fn failures_exit_non_zero_with_the_reason() {
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let (ok, log) = client(&format!("http://127.0.0.1:{port}/mcp"), "tools_call", Some("2025-11-25"));
    assert!(!ok, "nothing listens there");
    assert!(log.contains("scenario \"tools_call\" failed") && log.contains("cannot reach"), "{log}");

    let (ok, log) = client("http://127.0.0.1:1/mcp", "tools_call", Some("1999-01-01"));
    assert!(!ok);
    assert!(log.contains("MCP_CONFORMANCE_PROTOCOL_VERSION"), "{log}");
}

//! Talking to a real child process over its stdin and stdout.
#![cfg(all(feature = "child-process", unix))]

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use bytes::Bytes;
use portico::transport::child::{ChildHandle, ChildProcess, ChildReader, ChildWriter};
use portico::transport::{FrameReader, FrameWriter, Transport};

const LIMIT: Duration = Duration::from_secs(30);
const ECHO: &str = r#"while IFS= read -r l; do printf "%s\n" "$l"; done"#;

async fn bounded<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut).await.expect("test took too long")
}

async fn next(reader: &mut ChildReader) -> Option<Bytes> {
    bounded(reader.read_frame()).await.expect("read failed")
}

fn sh(script: &str) -> ChildProcess {
    let mut child = ChildProcess::new("/bin/sh");
    child.arg("-c").arg(script);
    child
}

fn spawn(builder: &mut ChildProcess) -> (ChildReader, ChildWriter, ChildHandle) {
    let (transport, handle) = builder.spawn().expect("spawn");
    let (reader, writer) = transport.split();
    (reader, writer, handle)
}

/// The process state letter from `/proc/<pid>/stat`, or `None` once it is gone.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may contain spaces; the state follows the last ')'.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Waits (bounded) until the process is neither running nor a zombie.
async fn until_reaped(pid: u32) {
    bounded(async {
        while proc_state(pid).is_some() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn echo_round_trip_and_clean_shutdown() {
    let (mut reader, mut writer, handle) = spawn(&mut sh(ECHO));
    let frames: Vec<String> =
        (0..200).map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"ping\"}}")).collect();
    for frame in &frames {
        writer.write_frame(frame.as_bytes()).await.expect("write");
    }
    writer.flush().await.expect("flush");
    for frame in &frames {
        assert_eq!(next(&mut reader).await.as_deref(), Some(frame.as_bytes()));
    }
    // A second exchange after the first flush.
    writer.write_frame(b"{\"id\":\"again\"}").await.expect("write");
    writer.flush().await.expect("flush");
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"id\":\"again\"}"[..]));

    writer.close().await.expect("close");
    assert!(next(&mut reader).await.is_none(), "child exits on stdin EOF");
    let status = bounded(handle.shutdown()).await.expect("shutdown");
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn shutdown_closes_stdin_itself() {
    let (mut reader, mut writer, handle) = spawn(&mut sh(ECHO));
    writer.write_frame(b"{}").await.expect("write");
    writer.flush().await.expect("flush");
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{}"[..]));
    let pid = handle.pid();
    // The writer stays open: shutdown must close the child's stdin on its own.
    let status = bounded(handle.shutdown()).await.expect("shutdown");
    assert!(status.success(), "{status:?}");
    assert!(next(&mut reader).await.is_none());
    let err = writer.write_frame(b"{}").await.and(writer.flush().await).expect_err("stdin closed");
    assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    until_reaped(pid).await;
}

#[tokio::test]
async fn env_cwd_and_args_are_applied() {
    let dir = std::env::temp_dir().canonicalize().expect("temp dir");
    let mut builder = sh(r#"printf '"%s|%s|%s|%s|%s"\n' "$FOO" "$BAR" "${HOME-unset}" "$(pwd)" "$1""#);
    builder.args(["sh", "first-arg"]).env_clear().env("FOO", "foo value").envs([("BAR", "bar")]).current_dir(&dir);
    let (mut reader, _writer, mut handle) = spawn(&mut builder);
    let line = next(&mut reader).await.expect("a line");
    let text: String = serde_json::from_slice(&line).expect("a JSON string");
    assert_eq!(text, format!("foo value|bar|unset|{}|first-arg", dir.display()));
    assert!(next(&mut reader).await.is_none());
    let status = bounded(handle.wait()).await.expect("wait");
    assert!(status.success());
}

#[tokio::test]
async fn stderr_output_does_not_disturb_the_stream() {
    // More stderr than a pipe holds, and one very long stderr line: the child would block
    // forever if nobody drained its stderr.
    let script = r#"
        i=0
        while [ $i -lt 2000 ]; do
            echo "log line $i: some diagnostic text to fill the pipe" >&2
            i=$((i+1))
        done
        head -c 100000 /dev/zero | tr '\0' 'e' >&2
        echo >&2
        printf '{"n":1}\n'
        echo "between" >&2
        printf '{"n":2}\n'
    "#;
    let (mut reader, _writer, mut handle) = spawn(&mut sh(script));
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"n\":1}"[..]));
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"n\":2}"[..]));
    assert!(next(&mut reader).await.is_none());
    assert!(bounded(handle.wait()).await.expect("wait").success());
}

#[tokio::test]
async fn child_exiting_on_its_own_is_reaped() {
    let (mut reader, _writer, handle) = spawn(&mut sh(r#"printf '{"bye":true}\n'; exit 3"#));
    let pid = handle.pid();
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"bye\":true}"[..]));
    assert!(next(&mut reader).await.is_none());
    // Nobody calls wait or shutdown: the background task reaps the child.
    until_reaped(pid).await;
    let status = bounded(async {
        loop {
            if let Some(status) = handle.try_status().expect("status") {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(status.code(), Some(3));
}

#[tokio::test]
async fn shutdown_escalates_to_sigkill() {
    // Ignores stdin EOF and SIGTERM (the ignored disposition survives exec).
    let mut builder = sh(r#"trap "" TERM; exec sleep 60"#);
    builder.shutdown_timeout(Duration::from_millis(200));
    let (mut reader, mut writer, handle) = spawn(&mut builder);
    writer.close().await.expect("close");
    let pid = handle.pid();
    let status = bounded(handle.shutdown()).await.expect("shutdown");
    assert_eq!(status.signal(), Some(9), "{status:?}");
    assert!(next(&mut reader).await.is_none());
    until_reaped(pid).await;
}

#[tokio::test]
async fn shutdown_uses_sigterm() {
    // Ignores stdin EOF but not SIGTERM.
    let mut builder = sh("exec sleep 60");
    builder.shutdown_timeout(Duration::from_millis(200));
    let (mut reader, _writer, handle) = spawn(&mut builder);
    let status = bounded(handle.shutdown()).await.expect("shutdown");
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert!(next(&mut reader).await.is_none());
}

#[tokio::test]
async fn dropping_everything_kills_the_child() {
    let (transport, handle) = sh("exec sleep 60").spawn().expect("spawn");
    let pid = handle.pid();
    assert_eq!(proc_state(pid).map(|s| s != 'Z'), Some(true));
    let (reader, writer) = transport.split();
    drop(handle);
    drop(writer);
    // Still alive while the reader exists.
    assert!(proc_state(pid).is_some());
    drop(reader);
    until_reaped(pid).await;
}

#[tokio::test]
async fn dropping_the_handle_keeps_the_transport_working() {
    let (mut reader, mut writer, handle) = spawn(&mut sh(ECHO));
    drop(handle);
    writer.write_frame(b"{\"still\":\"here\"}").await.expect("write");
    writer.flush().await.expect("flush");
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"still\":\"here\"}"[..]));
    writer.close().await.expect("close");
    assert!(next(&mut reader).await.is_none());
}

#[tokio::test]
async fn oversized_message_from_child_is_skipped() {
    let mut builder = sh(r#"head -c 5000 /dev/zero | tr '\0' 'x'; echo; printf '{"ok":1}\n'"#);
    builder.max_message_size(1000);
    let (mut reader, _writer, _handle) = spawn(&mut builder);
    let err = bounded(reader.read_frame()).await.expect_err("too large");
    assert!(err.is_recoverable(), "{err:?}");
    assert_eq!(next(&mut reader).await.as_deref(), Some(&b"{\"ok\":1}"[..]));
    assert!(next(&mut reader).await.is_none());
}

#[tokio::test]
async fn spawn_failure_is_an_error() {
    let err = ChildProcess::new("/nonexistent/portico-test-server").spawn().expect_err("no such program");
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
}

#[tokio::test]
async fn writer_blocked_on_a_full_pipe_is_released_by_shutdown() {
    // The child never reads its stdin, so the pipe fills and the writer waits.
    let mut builder = sh("exec sleep 60");
    builder.shutdown_timeout(Duration::from_millis(200));
    let (_reader, mut writer, handle) = spawn(&mut builder);
    let frame = vec![b'x'; 256 * 1024];
    let writing = tokio::spawn(async move {
        loop {
            if let Err(e) = writer.write_frame(&frame).await {
                return e;
            }
        }
    });
    // Let the writer fill the pipe (not required for correctness, only to exercise the wait).
    tokio::time::sleep(Duration::from_millis(50)).await;
    let status = bounded(handle.shutdown()).await.expect("shutdown");
    assert_eq!(status.signal(), Some(15), "{status:?}");
    let err = bounded(writing).await.expect("writer task");
    assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
}

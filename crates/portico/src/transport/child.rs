//! Spawning an MCP server as a child process and talking to it over its stdin and stdout.
//!
//! [`ChildProcess`] configures and spawns the server. It returns a [`ChildTransport`] (messages
//! as lines on the child's stdin and stdout) and a [`ChildHandle`] (the process itself).
//!
//! A background task owns the process and waits for it, so a child that exits on its own is
//! reaped even if nobody asks for its status; its stdout then ends and the transport's reader
//! sees end of stream. Another task forwards the child's stderr, line by line, to `tracing`
//! (target `portico::child`, level debug): servers write logs there, not errors.
//!
//! When the handle and both transport halves are dropped, the child is killed and reaped.
//! [`ChildHandle::shutdown`] ends it the polite way: close stdin, wait, SIGTERM, wait, SIGKILL.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncWrite;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, watch};

use super::stdio::{LineReader, LineWriter};
use super::{DEFAULT_MAX_MESSAGE_SIZE, FrameReader, FrameWriter, ReadError, Transport};
use crate::sync::lock;

/// How long [`ChildHandle::shutdown`] waits after each step by default: 2 seconds.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// Longest stderr line forwarded to `tracing`; longer lines are reported as skipped.
const MAX_STDERR_LINE: usize = 16 * 1024;

/// Configures and spawns an MCP server as a child process.
///
/// The child's stdin, stdout and stderr are always piped. Everything else follows
/// [`tokio::process::Command`]; reach it with [`command_mut`](Self::command_mut).
pub struct ChildProcess {
    command: Command,
    max_message_size: usize,
    shutdown_timeout: Duration,
    group: bool,
    on_stderr: Option<StderrSink>,
}

impl std::fmt::Debug for ChildProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildProcess")
            .field("command", &self.command)
            .field("max_message_size", &self.max_message_size)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("process_group", &self.group)
            .field("on_stderr", &self.on_stderr.is_some())
            .finish()
    }
}

/// A callback that sees each line the child writes to stderr.
type StderrSink = Arc<dyn Fn(&str) + Send + Sync>;

impl ChildProcess {
    /// A child running `program`, found on `PATH` unless it is a path.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        ChildProcess {
            command: Command::new(program),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            group: false,
            on_stderr: None,
        }
    }

    /// Starts the child in a process group of its own (Unix), and sends every signal
    /// ([`ChildHandle::terminate`], [`ChildHandle::start_kill`], the kill when everything is
    /// dropped) to that whole group, so the processes the server started itself (`npx` starts
    /// `node`, a shell script starts its command) stop with it. When the child exits on its
    /// own, what is left of its group is killed. Off by default.
    pub fn process_group(&mut self, own_group: bool) -> &mut Self {
        self.group = own_group;
        #[cfg(unix)]
        if own_group {
            self.command.process_group(0);
        }
        self
    }

    /// Calls `sink` with each line (lossily decoded as UTF-8, without its newline) the child
    /// writes to stderr, besides logging it. Lines longer than 16 KiB are skipped. `sink` runs
    /// on the task that reads stderr: keep it short (a host keeps the last lines in a ring).
    pub fn on_stderr(&mut self, sink: impl Fn(&str) + Send + Sync + 'static) -> &mut Self {
        self.on_stderr = Some(Arc::new(sink));
        self
    }

    /// Adds one argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.command.arg(arg);
        self
    }

    /// Adds several arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    /// Sets one environment variable.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.command.env(key, value);
        self
    }

    /// Sets several environment variables.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.command.envs(vars);
        self
    }

    /// Starts the child with an empty environment (plus whatever [`env`](Self::env) adds).
    pub fn env_clear(&mut self) -> &mut Self {
        self.command.env_clear();
        self
    }

    /// Sets the child's working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.command.current_dir(dir);
        self
    }

    /// Sets the largest message accepted from the child, in bytes.
    pub fn max_message_size(&mut self, limit: usize) -> &mut Self {
        self.max_message_size = limit;
        self
    }

    /// Sets how long [`ChildHandle::shutdown`] waits after closing stdin and after SIGTERM.
    pub fn shutdown_timeout(&mut self, grace: Duration) -> &mut Self {
        self.shutdown_timeout = grace;
        self
    }

    /// The underlying command, for settings this builder does not cover. Its stdio settings
    /// are overridden by [`spawn`](Self::spawn).
    pub fn command_mut(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Starts the child. Must be called within a Tokio runtime.
    ///
    /// # Errors
    /// When the process cannot be started.
    pub fn spawn(&mut self) -> io::Result<(ChildTransport, ChildHandle)> {
        let mut child = self
            .command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let pipe = |what| io::Error::other(format!("child {what} was not piped"));
        let pid = child.id().ok_or_else(|| io::Error::other("child has no process id"))?;
        let stdin = child.stdin.take().ok_or_else(|| pipe("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| pipe("stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| pipe("stderr"))?;

        let (signals, signal_rx) = mpsc::unbounded_channel();
        let (status_tx, status) = watch::channel(None);
        tokio::spawn(reap(child, signal_rx, status_tx, self.group));
        tokio::spawn(forward_stderr(stderr, pid, self.on_stderr.clone()));

        let stdin = Arc::new(Mutex::new(StdinSlot { pipe: Some(stdin), waker: None }));
        let reader = LineReader::new(stdout).with_max_message_size(self.max_message_size);
        let transport = ChildTransport {
            reader: ChildReader { lines: reader, _alive: signals.clone() },
            writer: ChildWriter { lines: LineWriter::new(SharedStdin(stdin.clone())), _alive: signals.clone() },
        };
        let handle = ChildHandle { pid, stdin, signals, status, grace: self.shutdown_timeout };
        Ok((transport, handle))
    }
}

/// A signal for the reaper task to deliver while it still owns the unreaped child.
#[derive(Debug, Clone, Copy)]
enum Sig {
    Term,
    Kill,
}

/// How the child ended, as published by the reaper task.
#[derive(Debug, Clone)]
enum Exit {
    Status(ExitStatus),
    Failed(io::ErrorKind, String),
}

/// Owns the child until it has been reaped. Signals arrive through `signals`; when every
/// sender is gone (handle and transport dropped), the child is killed.
async fn reap(
    mut child: Child,
    mut signals: mpsc::UnboundedReceiver<Sig>,
    status: watch::Sender<Option<Exit>>,
    group: bool,
) {
    let leader = child.id();
    let result = loop {
        tokio::select! {
            result = child.wait() => break result,
            sig = signals.recv() => match sig {
                Some(sig) => deliver(&mut child, sig, group),
                None => {
                    // Nobody can talk to or ask about the child any more.
                    deliver(&mut child, Sig::Kill, group);
                    break child.wait().await;
                }
            },
        }
    };
    if group {
        // The leader is gone; whatever it left running in its group goes too. (The group keeps
        // its id while any member lives, so this cannot reach an unrelated process group.)
        #[cfg(unix)]
        let _ = signal_group(leader, nix::sys::signal::Signal::SIGKILL);
    }
    #[cfg(not(unix))]
    let _ = leader;
    let exit = match result {
        Ok(s) => Exit::Status(s),
        Err(e) => Exit::Failed(e.kind(), e.to_string()),
    };
    status.send_replace(Some(exit));
}

/// Sends `sig` to the child. The child has not been reaped (we own it and `wait` has not
/// finished), so its process id cannot have been reused.
fn deliver(child: &mut Child, sig: Sig, group: bool) {
    let pid = child.id();
    #[cfg(unix)]
    if group {
        use nix::sys::signal::Signal;
        let signal = match sig {
            Sig::Kill => Signal::SIGKILL,
            Sig::Term => Signal::SIGTERM,
        };
        if let Err(e) = signal_group(pid, signal) {
            tracing::debug!(target: "portico::child", pid, ?sig, "group signal failed: {e}");
        }
        return;
    }
    #[cfg(not(unix))]
    let _ = group;
    let result = match sig {
        Sig::Kill => child.start_kill(),
        #[cfg(unix)]
        Sig::Term => terminate(pid),
        #[cfg(not(unix))]
        Sig::Term => child.start_kill(),
    };
    if let Err(e) = result {
        tracing::debug!(target: "portico::child", pid, ?sig, "signal failed: {e}");
    }
}

#[cfg(unix)]
fn terminate(pid: Option<u32>) -> io::Result<()> {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) else {
        return Ok(());
    };
    kill(Pid::from_raw(pid), Signal::SIGTERM).map_err(io::Error::from)
}

/// Sends `signal` to the process group led by `pid` (a child started with `process_group`).
#[cfg(unix)]
fn signal_group(pid: Option<u32>, signal: nix::sys::signal::Signal) -> io::Result<()> {
    use nix::sys::signal::killpg;
    use nix::unistd::Pid;
    let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) else {
        return Ok(());
    };
    match killpg(Pid::from_raw(pid), signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Logs the child's stderr, one line at a time, until it ends, and hands each line to `sink`.
async fn forward_stderr(stderr: ChildStderr, pid: u32, sink: Option<StderrSink>) {
    let mut lines = LineReader::new(stderr).with_max_message_size(MAX_STDERR_LINE).with_buffer_size(8 * 1024);
    loop {
        match lines.read_frame().await {
            Ok(Some(line)) => {
                let line = String::from_utf8_lossy(&line);
                tracing::debug!(target: "portico::child", pid, "stderr: {line}");
                if let Some(sink) = &sink {
                    sink(&line);
                }
            }
            Ok(None) => break,
            Err(ReadError::TooLarge { limit }) => {
                tracing::debug!(target: "portico::child", pid, "stderr: line of more than {limit} bytes skipped");
            }
            Err(e) => {
                tracing::debug!(target: "portico::child", pid, "stderr: read failed: {e}");
                break;
            }
        }
    }
}

/// The child's stdin, shared by the transport's writer and the handle so either can close it.
#[derive(Debug)]
struct StdinSlot {
    pipe: Option<ChildStdin>,
    /// The writer's task, if it is waiting for the pipe to take more bytes.
    waker: Option<Waker>,
}

/// Closes the pipe (the child reads end of stream) and wakes a writer stuck on it.
fn close_stdin(slot: &Mutex<StdinSlot>) {
    let (pipe, waker) = {
        let mut slot = lock(slot);
        (slot.pipe.take(), slot.waker.take())
    };
    drop(pipe);
    if let Some(waker) = waker {
        waker.wake();
    }
}

fn stdin_closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "child stdin closed")
}

/// The writer's view of the shared stdin. The lock is held only within a poll, never across
/// an await.
#[derive(Debug)]
struct SharedStdin(Arc<Mutex<StdinSlot>>);

impl AsyncWrite for SharedStdin {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut slot = lock(&self.0);
        let Some(pipe) = slot.pipe.as_mut() else {
            return Poll::Ready(Err(stdin_closed()));
        };
        let poll = Pin::new(pipe).poll_write(cx, buf);
        if poll.is_pending() {
            slot.waker = Some(cx.waker().clone());
        }
        poll
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match lock(&self.0).pipe.as_mut() {
            Some(pipe) => Pin::new(pipe).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        close_stdin(&self.0);
        Poll::Ready(Ok(()))
    }
}

/// Messages to and from a child process. Create with [`ChildProcess::spawn`].
#[derive(Debug)]
pub struct ChildTransport {
    reader: ChildReader,
    writer: ChildWriter,
}

/// Reads messages from the child's stdout. End of stream means the child closed its stdout,
/// usually by exiting.
#[derive(Debug)]
pub struct ChildReader {
    lines: LineReader<ChildStdout>,
    /// Keeps the child alive while this half exists.
    _alive: mpsc::UnboundedSender<Sig>,
}

/// Writes messages to the child's stdin. [`close`](FrameWriter::close) closes the child's
/// stdin, which asks a well-behaved server to exit.
#[derive(Debug)]
pub struct ChildWriter {
    lines: LineWriter<SharedStdin>,
    /// Keeps the child alive while this half exists.
    _alive: mpsc::UnboundedSender<Sig>,
}

impl Transport for ChildTransport {
    type Reader = ChildReader;
    type Writer = ChildWriter;
    fn split(self) -> (ChildReader, ChildWriter) {
        (self.reader, self.writer)
    }

    fn network_transport(&self) -> Option<&'static str> {
        Some("pipe")
    }
}

impl FrameReader for ChildReader {
    async fn read_frame(&mut self) -> Result<Option<Bytes>, ReadError> {
        self.lines.read_frame().await
    }
}

impl FrameWriter for ChildWriter {
    async fn write_frame(&mut self, frame: &[u8]) -> io::Result<()> {
        self.lines.write_frame(frame).await
    }
    async fn flush(&mut self) -> io::Result<()> {
        self.lines.flush().await
    }
    async fn close(&mut self) -> io::Result<()> {
        self.lines.close().await
    }
}

/// The running child process. Create with [`ChildProcess::spawn`].
///
/// Dropping the handle does not stop the child while the transport is in use; dropping the
/// handle and both transport halves kills it.
#[derive(Debug)]
pub struct ChildHandle {
    pid: u32,
    stdin: Arc<Mutex<StdinSlot>>,
    signals: mpsc::UnboundedSender<Sig>,
    status: watch::Receiver<Option<Exit>>,
    grace: Duration,
}

impl ChildHandle {
    /// The child's process id (possibly reused by another process once the child has exited
    /// and been reaped).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// How the child exited, or `None` while it runs. The child is reaped in the background,
    /// so this turns `Some` soon after it exits.
    ///
    /// # Errors
    /// When waiting for the child failed.
    pub fn try_status(&self) -> io::Result<Option<ExitStatus>> {
        match &*self.status.borrow() {
            None => Ok(None),
            Some(exit) => exit_result(exit).map(Some),
        }
    }

    /// Waits for the child to exit, without asking it to.
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Errors
    /// When waiting for the child failed.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let exit = self.status.wait_for(Option::is_some).await;
        match exit.as_deref() {
            Ok(Some(exit)) => exit_result(exit),
            _ => Err(io::Error::other("child reaper task stopped")),
        }
    }

    /// Closes the child's stdin now, as the transport writer's `close` does (without flushing
    /// what the writer buffered). A write waiting on the pipe fails with
    /// [`io::ErrorKind::BrokenPipe`], as do later writes.
    pub fn close_stdin(&self) {
        close_stdin(&self.stdin);
    }

    /// Sends SIGTERM to the child (on Unix; elsewhere it is killed). Does nothing once the
    /// child has been reaped.
    pub fn terminate(&self) {
        let _ = self.signals.send(Sig::Term);
    }

    /// Sends SIGKILL to the child. Does nothing once the child has been reaped.
    pub fn start_kill(&self) {
        let _ = self.signals.send(Sig::Kill);
    }

    /// Stops the child the way the MCP stdio transport asks for: close its stdin (if the
    /// transport's writer has not already), wait up to the shutdown timeout for it to exit,
    /// send SIGTERM, wait again, then send SIGKILL and wait for it.
    ///
    /// Close the transport's writer first, so buffered messages reach the child.
    ///
    /// # Cancel safety
    /// Dropping the future drops the handle: the child keeps running while the transport
    /// halves exist, and is killed otherwise.
    ///
    /// # Errors
    /// When waiting for the child failed.
    pub async fn shutdown(mut self) -> io::Result<ExitStatus> {
        self.close_stdin();
        if let Some(status) = self.wait_grace().await? {
            return Ok(status);
        }
        tracing::debug!(target: "portico::child", pid = self.pid, "child ignored stdin close; sending SIGTERM");
        self.terminate();
        if let Some(status) = self.wait_grace().await? {
            return Ok(status);
        }
        tracing::debug!(target: "portico::child", pid = self.pid, "child ignored SIGTERM; sending SIGKILL");
        self.start_kill();
        self.wait().await
    }

    async fn wait_grace(&mut self) -> io::Result<Option<ExitStatus>> {
        match tokio::time::timeout(self.grace, self.wait()).await {
            Ok(result) => result.map(Some),
            Err(_elapsed) => Ok(None),
        }
    }
}

fn exit_result(exit: &Exit) -> io::Result<ExitStatus> {
    match exit {
        Exit::Status(status) => Ok(*status),
        Exit::Failed(kind, message) => Err(io::Error::new(*kind, message.clone())),
    }
}

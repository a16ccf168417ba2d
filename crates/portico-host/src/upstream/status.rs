//! What the host knows about an upstream's health, for `portico servers` and the admin API.

use std::collections::VecDeque;
use std::time::SystemTime;

use serde::Serialize;

/// Lines of stderr kept per upstream.
pub const STDERR_TAIL: usize = 40;

/// Where an upstream is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum State {
    /// Lazy and not started yet.
    Idle,
    /// Being started for the first time.
    Starting,
    /// Connected and answering.
    Ready,
    /// Connected, but its last ping went unanswered.
    Degraded,
    /// Lost, and being started again after a backoff.
    Restarting,
    /// Gave up after too many failed starts in a row (see `restart.max_restarts`).
    Failed,
    /// Disabled or shut down.
    Stopped,
}

impl State {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Starting => "starting",
            State::Ready => "ready",
            State::Degraded => "degraded",
            State::Restarting => "restarting",
            State::Failed => "failed",
            State::Stopped => "stopped",
        }
    }
}

/// A snapshot of one upstream.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct UpstreamStatus {
    /// Its name in the config.
    pub name: String,
    /// `stdio` or `http`.
    pub kind: &'static str,
    /// Where it is.
    pub state: State,
    /// The revision it speaks, once connected.
    pub protocol_version: Option<String>,
    /// Its `serverInfo` name and version, once connected.
    pub server: Option<String>,
    /// Tools it lists (before include/exclude).
    pub tools: usize,
    /// Times it was started again after being lost or failing to start.
    pub restarts: u64,
    /// Why it last failed, if it did.
    pub last_error: Option<String>,
    /// Its process id (stdio, while running).
    pub pid: Option<u32>,
    /// When it last became ready.
    #[serde(skip)]
    pub ready_since: Option<SystemTime>,
    /// The last lines it wrote to stderr.
    pub stderr_tail: Vec<String>,
}

/// A ring of the last [`STDERR_TAIL`] stderr lines, each cut at 1 KiB.
#[derive(Debug, Default)]
pub(crate) struct Tail(VecDeque<String>);

impl Tail {
    pub(crate) fn push(&mut self, line: &str) {
        if self.0.len() == STDERR_TAIL {
            self.0.pop_front();
        }
        let mut line = line.to_owned();
        if line.len() > 1024 {
            let mut cut = 1024;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        self.0.push_back(line);
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        self.0.iter().cloned().collect()
    }
}

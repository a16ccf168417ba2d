//! `[audit]` read into an [`AuditConfig`]: the level, where the records go, what happens when
//! the store fails, whether a call waits for its record, checkpoints, redaction and retention.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::raw::{RawAudit, RawDuration, RawSize};
use super::{AuditError, RedactConfig, Redactor, RetentionConfig, redact, time};
use crate::config::{Secret, expand};

/// How much of each request is recorded, as in Kubernetes' audit policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum Level {
    /// Who, what, when, how it ended: no arguments, no result (an error keeps its message).
    Metadata,
    /// And the arguments.
    Request,
    /// And the result or error.
    #[default]
    RequestResponse,
}

impl Level {
    /// As in the config: `metadata`, `request`, `request-response`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Metadata => "metadata",
            Level::Request => "request",
            Level::RequestResponse => "request-response",
        }
    }

    /// The level named `s`.
    pub fn from_name(s: &str) -> Option<Level> {
        match s {
            "metadata" => Some(Level::Metadata),
            "request" => Some(Level::Request),
            "request-response" | "request+response" => Some(Level::RequestResponse),
            _ => None,
        }
    }
}

/// What happens while the store cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnFailure {
    /// Appends are refused and the host refuses new calls until the store is back.
    #[default]
    FailClosed,
    /// Records are spooled to a file and replayed in order when the store is back.
    Buffer,
}

/// Where the records are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A Postgres database, by URL.
    Postgres(Secret),
}

/// `[audit]`, validated, with every default applied.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AuditConfig {
    /// Whether the host keeps the log.
    pub enabled: bool,
    /// Where.
    pub store: StoreLocation,
    /// The state directory: keys, the spool, the SQLite file by default.
    pub state_dir: PathBuf,
    /// What happens while the store is down.
    pub on_failure: OnFailure,
    /// How much is recorded.
    pub level: Level,
    /// When an append returns.
    pub wait: Wait,
    /// Records waiting for the writer at most.
    pub queue: usize,
    /// How long an append waits for room in a full queue.
    pub queue_timeout: Duration,
    /// Records per transaction at most.
    pub batch: usize,
    /// Records between signed checkpoints.
    pub checkpoint_every: u64,
    /// A checkpoint at least this often while records come.
    pub checkpoint_interval: Option<Duration>,
    /// Redaction.
    pub redact: RedactConfig,
    /// Retention.
    pub retention: RetentionConfig,
}

/// When [`AuditLog::append`](super::AuditLog::append) returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Wait {
    /// Once the record is in the store or in the spool file: a crash of the host loses none
    /// (appends made at the same time share one write).
    #[default]
    Written,
    /// Once the writer's queue has it: faster, but a crash loses what is still queued.
    Queued,
}

impl AuditConfig {
    /// Validates `[audit]`; relative paths are under `state_dir`, `${…}` in `url` is expanded.
    ///
    /// # Errors
    /// The first invalid value, naming its key.
    pub fn from_raw(raw: &RawAudit, state_dir: &Path) -> Result<AuditConfig, AuditError> {
        let bad = |field: &str, message: String| AuditError::Config { field: field.to_owned(), message };
        let duration = |field: &str, v: &Option<RawDuration>, default: Duration| match v {
            None => Ok(default),
            Some(RawDuration::Seconds(s)) => {
                Duration::try_from_secs_f64(*s).map_err(|_| bad(field, format!("{s} is not a number of seconds")))
            }
            Some(RawDuration::Text(t)) => time::parse_duration(t).map_err(|m| bad(field, m)),
        };
        let size = |field: &str, v: &Option<RawSize>| match v {
            None => Ok(None),
            Some(RawSize::Bytes(b)) => Ok(Some(*b)),
            Some(RawSize::Text(t)) => time::parse_size(t).map(Some).map_err(|m| bad(field, m)),
        };
        let store = match (&raw.url, &raw.path) {
            (Some(_), Some(_)) => {
                return Err(bad("url", "set `url` (Postgres) or `path` (SQLite), not both".to_owned()));
            }
            (Some(url), None) => {
                let url = expand::expand(url, "audit.url", &expand::Environment)
                    .map_err(|e| bad("url", e.message.clone()))?;
                if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return Err(bad("url", "must be a postgres:// URL (SQLite is the default: see `path`)".to_owned()));
                }
                StoreLocation::Postgres(Secret::new(url))
            }
            (None, path) => StoreLocation::Sqlite(state_dir.join(path.as_deref().unwrap_or("audit.db"))),
        };
        let on_failure = match raw.on_failure.as_deref() {
            None | Some("fail-closed") => OnFailure::FailClosed,
            Some("buffer") => OnFailure::Buffer,
            Some(other) => return Err(bad("on_failure", format!("`{other}` is not `fail-closed` or `buffer`"))),
        };
        let wait = match raw.wait.as_deref() {
            None | Some("written") => Wait::Written,
            Some("queued") => Wait::Queued,
            Some(other) => return Err(bad("wait", format!("`{other}` is not `written` or `queued`"))),
        };
        let level = match raw.level.as_deref() {
            None => Level::default(),
            Some(l) => Level::from_name(l)
                .ok_or_else(|| bad("level", format!("`{l}` is not `metadata`, `request` or `request-response`")))?,
        };
        let positive = |field: &str, v: Option<usize>, default: usize| match v {
            None => Ok(default),
            Some(0) => Err(bad(field, "must be at least 1".to_owned())),
            Some(n) => Ok(n),
        };
        let checkpoint_every = match raw.checkpoint_every {
            None => 1000,
            Some(0) => return Err(bad("checkpoint_every", "must be at least 1".to_owned())),
            Some(n) => n,
        };
        let checkpoint_interval =
            Some(duration("checkpoint_interval", &raw.checkpoint_interval, Duration::from_secs(60))?)
                .filter(|d| !d.is_zero());
        let mut keys: Vec<String> = if raw.redact.default_keys.unwrap_or(true) {
            redact::DEFAULT_KEYS.iter().map(|k| (*k).to_owned()).collect()
        } else {
            Vec::new()
        };
        keys.extend(raw.redact.keys.iter().cloned());
        let max_field_bytes = size("redact.max_field_bytes", &raw.redact.max_field_bytes)?.unwrap_or(64 * 1024);
        let redact = RedactConfig {
            keys,
            pointers: raw.redact.pointers.clone(),
            max_field_bytes: usize::try_from(max_field_bytes).unwrap_or(usize::MAX),
        };
        // Checked now rather than at open.
        Redactor::new(&redact, level, &[0; 32]).map_err(|m| bad("redact", m))?;
        let r = &raw.retention;
        let retention = RetentionConfig {
            max_age: r
                .max_age
                .as_ref()
                .map(|d| duration("retention.max_age", &Some(d.clone()), Duration::ZERO))
                .transpose()?,
            max_size: size("retention.max_size", &r.max_size)?,
            export_dir: state_dir.join(r.export_dir.as_deref().unwrap_or("audit-archive")),
            interval: duration("retention.interval", &r.interval, Duration::from_secs(3600))?
                .max(Duration::from_secs(1)),
        };
        Ok(AuditConfig {
            enabled: raw.enabled.unwrap_or(true),
            store,
            state_dir: state_dir.to_path_buf(),
            on_failure,
            level,
            wait,
            queue: positive("queue", raw.queue, 8192)?,
            queue_timeout: duration("queue_timeout", &raw.queue_timeout, Duration::from_secs(5))?,
            batch: positive("batch", raw.batch, 1024)?,
            checkpoint_every,
            checkpoint_interval,
            redact,
            retention,
        })
    }
}

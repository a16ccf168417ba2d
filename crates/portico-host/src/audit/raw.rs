//! `[audit]` as written in `portico.toml`: every key, before defaults and validation
//! ([`super::AuditConfig::from_raw`] applies both).
//!
//! ```toml
//! [audit]
//! on_failure = "fail-closed"       # or "buffer": spool to a file while the store is down
//! level = "request-response"       # or "metadata", "request"
//! # url = "postgres://portico@127.0.0.1/portico"   # default: SQLite, <state_dir>/audit.db
//!
//! [audit.redact]
//! keys = ["session_key"]           # added to password, secret, token, api_key, authorization, cookie
//! pointers = ["/arguments/query", "/result/content/*/text"]
//! max_field_bytes = "64KiB"
//!
//! [audit.retention]
//! max_age = "90d"
//! max_size = "1GiB"
//! ```

use serde::{Deserialize, Serialize};

/// `[audit]`: the activity log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawAudit {
    /// `false` turns the activity log off; on when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `postgres://…` (or `postgresql://…`) keeps the log in Postgres; `${…}` is expanded.
    /// Without it the log is SQLite under the state directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The SQLite file, relative to the state directory; `audit.db` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What happens while the store cannot be written: `fail-closed` (the default: new calls
    /// are refused) or `buffer` (records are spooled to a file and replayed in order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<String>,
    /// How much of each call is recorded: `metadata`, `request` (with the arguments) or
    /// `request-response` (the default: arguments and result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// When an append returns: `written` (the default: once the record is in the store or the
    /// spool file, so a crash of the host loses none) or `queued` (once the writer has it).
    pub wait: Option<String>,
    /// Records waiting for the writer at most; 8192 when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<usize>,
    /// How long an append waits for room in a full queue before it fails; `"5s"` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_timeout: Option<RawDuration>,
    /// Records written in one transaction at most; 1024 when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// A signed checkpoint every this many records; 1000 when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_every: Option<u64>,
    /// And at least this often while records arrive; `"60s"` when not set, `0` for by count only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_interval: Option<RawDuration>,
    /// `[audit.redact]`.
    #[serde(default, skip_serializing_if = "RawRedact::is_default")]
    pub redact: RawRedact,
    /// `[audit.retention]`.
    #[serde(default, skip_serializing_if = "RawRetention::is_default")]
    pub retention: RawRetention,
}

/// `[audit.redact]`: what is replaced by an HMAC before a record is written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawRedact {
    /// Key names whose values are redacted wherever they appear in arguments, results and
    /// errors, added to the defaults. A name matches a key holding it as whole words in any
    /// case and spelling (`api_key` matches `x-api-key`, `apiKey`, `APIKEY`); one with `*`,
    /// `?` or `[` is a glob on the whole key, in any case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// `false` drops the default names (password, secret, token, api_key, authorization,
    /// cookie); `true` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_keys: Option<bool>,
    /// JSON pointers into the record (`/arguments/query`); a `*` segment is any key or index
    /// (`/result/content/*/text`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pointers: Vec<String>,
    /// The largest field (arguments, result, error, …) kept whole, as bytes of JSON; a larger
    /// one is cut and marked in `audit.truncated`. `"64KiB"` when not set, `0` for no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_field_bytes: Option<RawSize>,
}

impl RawRedact {
    fn is_default(&self) -> bool {
        *self == RawRedact::default()
    }
}

/// `[audit.retention]`: when old records go (after they are exported to JSONL).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RawRetention {
    /// Records older than this go (`"90d"`); kept for ever when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age: Option<RawDuration>,
    /// The oldest records go while the records' JSON adds up to more than this (`"1GiB"`);
    /// no limit when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<RawSize>,
    /// Where removed records are exported first, relative to the state directory;
    /// `audit-archive` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_dir: Option<String>,
    /// How often retention runs while the log is open; `"1h"` when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<RawDuration>,
}

impl RawRetention {
    fn is_default(&self) -> bool {
        *self == RawRetention::default()
    }
}

/// A duration: seconds as a number, or text like `"90s"`, `"10m"`, `"7d"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum RawDuration {
    /// Seconds.
    Seconds(f64),
    /// With a unit.
    Text(String),
}

/// A size: bytes as a number, or text like `"64KiB"`, `"1GiB"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum RawSize {
    /// Bytes.
    Bytes(u64),
    /// With a unit.
    Text(String),
}

//! Reading the log: [`Filter`]s, [`Record`]s, and a live tail ([`Follow`]).

use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::sync::watch;

use super::chain::hex;
use super::store::{Cond, Order, Select, StoredRecord};
use super::{AuditError, AuditLog, time};

/// Which records a query returns. Every condition set must hold; `tool` is the name (or URI)
/// the client used, as `portico tools` lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Filter {
    /// The upstream server.
    pub server: Option<String>,
    /// The tool, prompt or resource URI.
    pub tool: Option<String>,
    /// `allow`, `ask` or `deny`.
    pub decision: Option<String>,
    /// `success`, `error`, `denied`, `cancelled` or `timeout`.
    pub status: Option<String>,
    /// The principal.
    pub principal: Option<String>,
    /// Started at or after.
    pub since: Option<SystemTime>,
    /// Started before.
    pub until: Option<SystemTime>,
    /// Only errors and timeouts.
    pub errors: bool,
    /// At most this many (the latest); 100 when not set.
    pub limit: Option<usize>,
}

impl Filter {
    /// Every record (the latest 100 by default).
    pub fn new() -> Filter {
        Filter::default()
    }

    pub(crate) fn conds(&self) -> Vec<Cond> {
        let mut c = Vec::new();
        let eq = |col: &'static str, v: &Option<String>, c: &mut Vec<Cond>| {
            if let Some(v) = v {
                c.push(Cond::Eq(col, v.clone()));
            }
        };
        eq("server", &self.server, &mut c);
        eq("tool", &self.tool, &mut c);
        eq("decision", &self.decision, &mut c);
        eq("status", &self.status, &mut c);
        eq("principal", &self.principal, &mut c);
        if let Some(t) = self.since {
            c.push(Cond::Ge("ts", time::micros(t)));
        }
        if let Some(t) = self.until {
            c.push(Cond::Lt("ts", time::micros(t)));
        }
        if self.errors {
            c.push(Cond::Errors);
        }
        c
    }
}

/// One record as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Record {
    /// Its position in the log.
    pub seq: u64,
    /// Its ULID.
    pub id: String,
    /// When the request started.
    pub start: SystemTime,
    /// The MCP method.
    pub method: String,
    /// The upstream server.
    pub server: Option<String>,
    /// The tool, prompt or resource URI the client used.
    pub target: Option<String>,
    /// The principal.
    pub principal: Option<String>,
    /// The policy decision.
    pub decision: Option<String>,
    /// How it ended.
    pub status: String,
    /// The record as canonical JSON, exactly as hashed.
    pub text: String,
    /// Its hash in the chain (hex).
    pub hash: String,
}

impl Record {
    /// The record as JSON (`Null` if what is stored is not JSON: `verify` says so).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// How long it took, from `duration_us`.
    pub fn duration(&self) -> Option<Duration> {
        self.json().get("duration_us")?.as_u64().map(Duration::from_micros)
    }
}

impl From<StoredRecord> for Record {
    fn from(r: StoredRecord) -> Record {
        Record {
            seq: r.seq,
            id: r.columns.id,
            start: time::from_micros(r.columns.ts),
            method: r.columns.method,
            server: r.columns.server,
            target: r.columns.tool,
            principal: r.columns.principal,
            decision: r.columns.decision,
            status: r.columns.status,
            text: r.text,
            hash: hex(&r.hash),
        }
    }
}

/// A live tail: the records appended after a point, as they come ([`AuditLog::follow`]).
#[derive(Debug)]
pub struct Follow {
    pub(crate) log: AuditLog,
    pub(crate) conds: Vec<Cond>,
    pub(crate) after: u64,
    pub(crate) head: watch::Receiver<u64>,
}

impl Follow {
    /// The next matching records (waits for at least one; polls the store every 500 ms, and
    /// wakes at once for records this process writes).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub async fn next(&mut self) -> Result<Vec<Record>, AuditError> {
        loop {
            let mut conds = self.conds.clone();
            conds.push(Cond::Gt("seq", super::store::seq_i64(self.after)));
            let rows = self.log.select(Select { conds, order: Order::SeqAsc, limit: 1000 }).await?;
            if let Some(last) = rows.last() {
                self.after = last.seq;
                return Ok(rows.into_iter().map(Record::from).collect());
            }
            tokio::select! {
                _ = self.head.changed() => {}
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    }

    /// The last `seq` seen.
    pub fn position(&self) -> u64 {
        self.after
    }
}

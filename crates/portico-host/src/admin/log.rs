//! `/log`: the activity log, read, followed live, and verified.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Admin, Refusal, sse};
use crate::audit::{AuditLog, Filter, Record, time};

/// Records one list answer holds at most.
const MAX_LIMIT: usize = 1000;

/// The query of `GET /log` and `GET /log/events`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct LogQuery {
    server: Option<String>,
    tool: Option<String>,
    status: Option<String>,
    decision: Option<String>,
    principal: Option<String>,
    since: Option<String>,
    until: Option<String>,
    limit: Option<usize>,
}

impl LogQuery {
    fn filter(self) -> Result<Filter, Refusal> {
        self.parse().map_err(|e| Refusal::new(StatusCode::BAD_REQUEST, e))
    }

    fn parse(self) -> Result<Filter, String> {
        let now = time::now_micros();
        let when = |s: Option<String>| -> Result<_, String> {
            s.filter(|s| !s.is_empty()).map(|s| time::parse_when(&s, now).map(time::from_micros)).transpose()
        };
        let some = |s: Option<String>| s.filter(|s| !s.is_empty());
        let mut f = Filter::new();
        f.server = some(self.server);
        f.tool = some(self.tool);
        f.status = some(self.status);
        f.decision = some(self.decision);
        f.principal = some(self.principal);
        f.since = when(self.since)?;
        f.until = when(self.until)?;
        f.limit = Some(self.limit.unwrap_or(100).clamp(1, MAX_LIMIT));
        Ok(f)
    }
}

fn audit(admin: &Admin) -> Result<AuditLog, Refusal> {
    admin
        .supervisor
        .as_ref()
        .and_then(|s| s.audit().cloned())
        .ok_or_else(|| Refusal::new(StatusCode::NOT_FOUND, "the activity log is off ([audit] enabled = false)"))
}

/// A record as the list shows it: the columns, without arguments and result.
fn summary(r: &Record) -> Value {
    let ms = |t: std::time::SystemTime| time::micros(t) / 1000;
    json!({
        "seq": r.seq,
        "id": r.id,
        "start": ms(r.start),
        "method": r.method,
        "server": r.server,
        "tool": r.target,
        "principal": r.principal,
        "decision": r.decision,
        "status": r.status,
        "duration_ms": r.duration().map(|d| d.as_secs_f64() * 1000.0),
    })
}

pub(super) async fn list(State(admin): State<Admin>, Query(q): Query<LogQuery>) -> Result<Response, Refusal> {
    let log = audit(&admin)?;
    let records = log.query(&q.filter()?).await.map_err(unavailable)?;
    Ok(Json(records.iter().map(summary).collect::<Vec<_>>()).into_response())
}

/// One record, whole: `{seq, hash, record}` with the record as it was hashed.
pub(super) async fn show(State(admin): State<Admin>, Path(id): Path<String>) -> Result<Response, Refusal> {
    let log = audit(&admin)?;
    let r = log
        .show(&id)
        .await
        .map_err(unavailable)?
        .ok_or_else(|| Refusal::new(StatusCode::NOT_FOUND, "no such record"))?;
    Ok(Json(json!({ "seq": r.seq, "hash": r.hash, "summary": summary(&r), "record": r.json() })).into_response())
}

/// Records appended from now on that match the query, each a `record` event.
pub(super) async fn events(State(admin): State<Admin>, Query(q): Query<LogQuery>) -> Result<Response, Refusal> {
    let log = audit(&admin)?;
    let filter = q.filter()?;
    Ok(sse(move |tx| async move {
        let after = log.last_seq().await.ok().flatten();
        let mut follow = match log.follow(&filter, after).await {
            Ok(f) => f,
            Err(e) => {
                let _ = tx.send(json!({ "event": "error", "error": e.to_string() })).await;
                return;
            }
        };
        loop {
            let next = tokio::select! {
                next = follow.next() => next,
                () = tx.closed() => return,
            };
            match next {
                Ok(records) => {
                    for r in &records {
                        if tx.send(json!({ "event": "record", "record": summary(r) })).await.is_err() {
                            return;
                        }
                    }
                }
                Err(e) => {
                    let _ = tx.send(json!({ "event": "error", "error": e.to_string() })).await;
                    return;
                }
            }
        }
    })
    .into_response())
}

/// Runs `verify` over the whole log.
pub(super) async fn verify(State(admin): State<Admin>) -> Result<Response, Refusal> {
    let log = audit(&admin)?;
    let report = log.verify().await.map_err(unavailable)?;
    Ok(Json(json!({
        "ok": report.ok(),
        "records": report.records,
        "checkpoints": report.checkpoints,
        "unsigned_tail": report.unsigned_tail,
        "first_bad_seq": report.first_bad_seq(),
        "problems": report.problems.len() as u64 + report.more_problems,
        "text": report.to_string(),
    }))
    .into_response())
}

fn unavailable(e: crate::audit::AuditError) -> Refusal {
    Refusal::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
}
